//! Light nodes: embedded nodes lean enough for ten thousand in one process.
//!
//! A light node has what a rotation needs of a node — its own root with the files its daemon
//! writes, its journal, its service manager, the reference daemon's whole logic, and a kubelet
//! that posts the Node's status — but no connection of its own. Its daemon's requests and
//! watches are HTTP/2 streams of one client all light daemons of the scenario share (they have
//! one identity anyway: the daemon's service account), and its kubelet posts status through one
//! shared client with cluster-wide rights, as kwok's node simulator does. An embedded node holds
//! about nine descriptors (a TLS listener, HTTP/1.1 connections for each watch, and the API
//! server's ends of them), which stops a process at about 2,000 nodes.
//!
//! What a light node cannot show:
//! - its kubelet serves no TLS, so nothing judges whether it accepts the kube-apiserver's
//!   client certificate (the kubelet steps say so);
//! - its kubelet posts status as a shared identity, not `system:node:<name>`, so the Node
//!   authorizer and NodeRestriction see no kubelet of its own;
//! - it runs the reference daemon only (no agent binary, no mutant);
//! - its kubelet does not reload `kubelet-ca.crt` or log that it did;
//! - it has no systemd private bus socket (the reference daemon never dials it).

use super::embedded::{Service, ServiceContext};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

/// What a light kubelet gives as its endpoint: port 0, where nothing listens.
pub const LIGHT_KUBELET_ENDPOINT: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0));

/// The clients a scenario's light nodes share.
#[derive(Clone)]
pub struct LightClients {
    /// The daemons' (the machine-config-daemon service account's).
    pub agent: kube::Client,
    /// The kubelets' status posts.
    pub kubelet: kube::Client,
}

/// A kubelet that posts its Node's status through a shared client and serves nothing.
pub struct LightKubelet {
    pub client: kube::Client,
}

#[async_trait::async_trait]
impl Service for LightKubelet {
    async fn run(&self, ctx: ServiceContext) {
        ctx.node.set_kubelet_endpoint(Some(LIGHT_KUBELET_ENDPOINT));
        super::kubelet_status::report_with(&ctx, 0, self.client.clone()).await;
        ctx.node.set_kubelet_endpoint(None);
    }
}
