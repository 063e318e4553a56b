//! A node's files as its kernel shows them: contents, owner and mode, a file a step writes, and
//! whether a noted file was written again; whether a path exists, and a path removed. Judged
//! path by path; the kubelet's CA bundle has phrases of its own (`kubelet_ca`).

use anyhow::{Context, ensure};
use cucumber::{given, then, when};
use harness::steps::oracle;
use harness::steps::params::{FileMode, NodePath};
use harness::world::ConformanceWorld;

/// Every node's file holds a ControllerConfig spec field as the 4.16 daemon writes it
/// (`writeToDisk`: the field's bytes, a newline appended when missing), e.g.
/// `/etc/kubernetes/kubelet-ca.crt` and `kubeAPIServerServingCAData`.
#[then(regex = r"^every node's (/\S+) holds the ControllerConfig's (\w+)$")]
async fn file_holds_controller_config(
    world: &mut ConformanceWorld,
    path: String,
    field: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let spec = c.controller_config_spec().await?;
    let expected = oracle::written_by_4_16(&oracle::spec_bytes(&spec, &field)?);
    for node in &c.nodes {
        let on_disk = node.read(&path).await?;
        ensure!(
            on_disk == expected,
            "{}: {path} does not hold spec.{field} ({} bytes, expected {}): {:?}",
            node.name(),
            on_disk.len(),
            expected.len(),
            String::from_utf8_lossy(&on_disk)
                .chars()
                .take(200)
                .collect::<String>()
        );
    }
    Ok(())
}

/// What the write step puts in a file.
const WRITTEN: &[u8] = b"written by a step (mco-conformance)\n";

/// A step writes the file on every node (mode 0644), as `oc debug node/…` would.
#[when(regex = r"^the file (/\S+) is written on every node$")]
async fn write_file(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        node.write(&path, WRITTEN, 0o644).await?;
    }
    Ok(())
}

/// A file's owner and mode as the node's kernel reports them (`stat`), "root" being the owner
/// of the node's `/` (uid 0 in a container node; the user running the suite on an embedded
/// node, whose root is a directory of theirs).
#[then(expr = "every node's {path} is owned by root with mode {mode}")]
async fn owned_by_root(world: &mut ConformanceWorld, path: NodePath, mode: FileMode) -> anyhow::Result<()> {
    let (NodePath(path), FileMode(mode)) = (path, mode);
    for node in &world.cluster()?.nodes {
        let root = node
            .stat("/")
            .await?
            .with_context(|| format!("{}: no /", node.name()))?;
        let st = node
            .stat(&path)
            .await?
            .with_context(|| format!("{}: no {path}", node.name()))?;
        ensure!(
            (st.uid, st.gid, st.mode) == (root.uid, root.gid, mode),
            "{}: {path} is owned by {}:{} with mode {:04o}, expected root ({}:{}) with mode {mode:04o}",
            node.name(),
            st.uid,
            st.gid,
            st.mode,
            root.uid,
            root.gid
        );
    }
    Ok(())
}

/// A file's owner and mode as the node's kernel reports them (`stat`).
#[then(expr = "every node's {path} is owned by {int}:{int} with mode {mode}")]
async fn owner_and_mode(
    world: &mut ConformanceWorld,
    path: NodePath,
    uid: u32,
    gid: u32,
    mode: FileMode,
) -> anyhow::Result<()> {
    let (NodePath(path), FileMode(mode)) = (path, mode);
    for node in &world.cluster()?.nodes {
        let st = node
            .stat(&path)
            .await?
            .with_context(|| format!("{}: no {path}", node.name()))?;
        ensure!(
            (st.uid, st.gid, st.mode) == (uid, gid, mode),
            "{}: {path} is owned by {}:{} with mode {:04o}, expected {uid}:{gid} with mode {mode:04o}",
            node.name(),
            st.uid,
            st.gid,
            st.mode
        );
    }
    Ok(())
}

/// Every node has the file, and it is empty (0 bytes), as a template whose field is unset renders
/// it.
#[then(expr = "every node's {path} is empty")]
async fn file_is_empty(world: &mut ConformanceWorld, path: NodePath) -> anyhow::Result<()> {
    let NodePath(path) = path;
    for node in &world.cluster()?.nodes {
        let contents = node
            .read(&path)
            .await
            .with_context(|| format!("{}: reading {path}", node.name()))?;
        ensure!(
            contents.is_empty(),
            "{}: {path} holds {} byte(s), expected none: {:?}",
            node.name(),
            contents.len(),
            String::from_utf8_lossy(&contents[..contents.len().min(200)])
        );
    }
    Ok(())
}

/// Every node has the file, and it holds something (1 byte or more), as a template whose field
/// is set renders it.
#[then(expr = "every node's {path} is not empty")]
async fn file_is_not_empty(world: &mut ConformanceWorld, path: NodePath) -> anyhow::Result<()> {
    let NodePath(path) = path;
    for node in &world.cluster()?.nodes {
        let contents = node
            .read(&path)
            .await
            .with_context(|| format!("{}: reading {path}", node.name()))?;
        ensure!(!contents.is_empty(), "{}: {path} is empty", node.name());
    }
    Ok(())
}

/// The file a write step put on every node is still there, as written.
#[then(regex = r"^every node still has the file (/\S+) as written$")]
async fn still_has_written(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        let contents = node.read(&path).await?;
        ensure!(
            contents == WRITTEN,
            "{}: {path} holds {:?}",
            node.name(),
            String::from_utf8_lossy(&contents)
        );
    }
    Ok(())
}

/// Note every node's file as it is now (its inode and contents), for a later step that asks
/// whether it was written again.
#[given(regex = r"^every node's (/\S+) is noted$")]
async fn file_noted(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    let mut noted = Vec::new();
    for node in &world.cluster()?.nodes {
        let stat = node
            .stat(&path)
            .await?
            .with_context(|| format!("{}: {path} does not exist, so it cannot be noted", node.name()))?;
        let contents = node.read(&path).await?;
        noted.push(((node.name().to_string(), path.clone()), (stat.inode, contents)));
    }
    world.noted.extend(noted);
    Ok(())
}

/// The inode and contents a "noted" step found for the file on this node.
fn noted<'w>(world: &'w ConformanceWorld, node: &str, path: &str) -> anyhow::Result<&'w (u64, Vec<u8>)> {
    world
        .noted
        .get(&(node.to_string(), path.to_string()))
        .with_context(|| {
            format!("{node}: {path} was not noted (add \"Given every node's {path} is noted\" first)")
        })
}

/// What a "noted" step found for the file on this node, and its inode and contents now.
async fn noted_and_now<'w>(
    world: &'w ConformanceWorld,
    node: &dyn harness::node::Node,
    path: &str,
) -> anyhow::Result<(&'w (u64, Vec<u8>), (u64, Vec<u8>))> {
    let noted = noted(world, node.name(), path)?;
    let now = node
        .stat(path)
        .await?
        .with_context(|| format!("{}: {path} is gone", node.name()))?;
    Ok((noted, (now.inode, node.read(path).await?)))
}

/// The file was written again since it was noted (a writer that replaces files, as MCO's
/// atomic writes do, leaves a new inode), with the contents it had: written, not changed.
#[then(regex = r"^every node's (/\S+) was written again with the same contents$")]
async fn file_written_again(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        let ((inode, contents), (now, read)) = noted_and_now(world, node.as_ref(), &path).await?;
        ensure!(
            now != *inode,
            "{}: {path} was not written again: it is the same file (inode {inode}) as when it was noted",
            node.name()
        );
        ensure!(
            read == *contents,
            "{}: {path} was written with other contents: {:?}, noted {:?}",
            node.name(),
            String::from_utf8_lossy(&read),
            String::from_utf8_lossy(contents)
        );
    }
    Ok(())
}

/// The file is the very one that was noted: not replaced, not changed.
#[then(regex = r"^every node's (/\S+) was not written again$")]
async fn file_not_written_again(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        let ((inode, contents), (now, read)) = noted_and_now(world, node.as_ref(), &path).await?;
        ensure!(
            now == *inode && read == *contents,
            "{}: {path} was written again (inode {now} now, {inode} when noted; contents {})",
            node.name(),
            if read == *contents { "the same" } else { "changed" }
        );
    }
    Ok(())
}

/// No node has anything at the path (file or directory).
#[then(regex = r"^no node has the path (/\S+)$")]
async fn no_path(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        ensure!(node.stat(&path).await?.is_none(), "{} has {path}", node.name());
    }
    Ok(())
}

/// Every node has something at the path (file or directory).
#[then(regex = r"^every node has the path (/\S+)$")]
async fn every_node_has_path(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        ensure!(node.stat(&path).await?.is_some(), "{} has no {path}", node.name());
    }
    Ok(())
}

/// The path (a file, or a directory and all in it) is removed from every node.
#[when(regex = r"^(/\S+) is removed from every node$")]
async fn remove_path(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        node.remove(&path).await?;
    }
    Ok(())
}
