//! The state every connection and request of a running server shares: the store, the
//! authorizer chain, faults, limits, the TLS configuration and the tokens that close
//! connections and watches. The server builds it, the handle and the request handlers read and
//! change it. It owns no task and knows nothing of HTTP or of resource semantics; it must not
//! reach for the server, the handle or the handlers that hold it.

use crate::auth::{Authenticator, Identity, Policy};
use crate::conn::Timeouts;
use crate::error::ApiError;
use crate::faults::{Fault, Faults};
use crate::pki::ServingCert;
use crate::store::Store;
use crate::tls::{TlsError, server_config};
use rustls::ServerConfig;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// State every connection and request shares.
pub(crate) struct Shared {
    pub(crate) store: Store,
    pub(crate) policy: Policy,
    pub(crate) faults: Faults,
    pub(crate) body_limit: usize,
    pub(crate) bookmark_interval: Duration,
    pub(crate) timeouts: Timeouts,
    pub(crate) log_requests: bool,
    pub(crate) addr: SocketAddr,
    pub(crate) authenticator: RwLock<Arc<Authenticator>>,
    pub(crate) tls: RwLock<Arc<ServerConfig>>,
    pub(crate) serving: RwLock<ServingCert>,
    pub(crate) tokens: HashMap<String, Identity>,
    pub(crate) anonymous: bool,
    pub(crate) connections: RwLock<CancellationToken>,
    pub(crate) watches: RwLock<CancellationToken>,
}

pub(crate) fn read<T: Clone>(lock: &RwLock<T>) -> T {
    lock.read().unwrap_or_else(|p| p.into_inner()).clone()
}

pub(crate) fn replace<T>(lock: &RwLock<T>, value: T) -> T {
    std::mem::replace(&mut *lock.write().unwrap_or_else(|p| p.into_inner()), value)
}

impl Shared {
    pub(crate) fn authenticator(&self) -> Arc<Authenticator> {
        read(&self.authenticator)
    }

    pub(crate) fn tls_config(&self) -> Arc<ServerConfig> {
        read(&self.tls)
    }

    /// Cancelled when every open watch must end.
    pub(crate) fn watches_closing(&self) -> CancellationToken {
        read(&self.watches)
    }

    pub(crate) fn close_watches(&self) {
        replace(&self.watches, CancellationToken::new()).cancel();
    }

    pub(crate) fn drop_connections(&self) {
        replace(&self.connections, CancellationToken::new()).cancel();
    }

    /// Carry out a fault.
    pub(crate) fn inject(&self, fault: Fault) -> Result<(), ApiError> {
        match fault {
            Fault::CloseWatches => self.close_watches(),
            Fault::Compact => self.store.compact(),
            Fault::Restart { keep_store } => {
                if !keep_store {
                    self.store.wipe();
                }
                self.close_watches();
                self.drop_connections();
            }
            request_fault => self.faults.add(&request_fault)?,
        }
        Ok(())
    }

    pub(crate) fn rebuild_tls(
        &self,
        serving: &ServingCert,
        authenticator: &Authenticator,
    ) -> Result<(), TlsError> {
        let config = server_config(
            &serving.chain_pem,
            &serving.key_pem,
            authenticator.anchor_subjects(),
        )?;
        replace(&self.tls, config);
        Ok(())
    }
}
