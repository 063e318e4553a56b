//! The container node image, built by the harness itself with no registry: a root
//! filesystem of our own binaries under `/usr/bin`, the shared libraries `ldd` lists for them,
//! and busybox (Debian's `busybox-static`) as `/bin/sh` and the coreutils, imported with
//! `docker import`. It is tagged by a hash of its content and reused while that is unchanged,
//! and also tagged `mco-conformance-node:<crate version>` so vendors can build their agent image
//! `FROM` it.

use super::agent_service::{IMAGE_TOOL_NAMES, NODE_TOOLS, TOOL_NAMES};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The image repository; tags are `sha-<content hash>` and the crate version.
pub const IMAGE_REPOSITORY: &str = "mco-conformance-node";
/// Busybox applets a RHCOS node has in another form that agents call with options busybox
/// lacks (`rpm -qf`): better absent than wrong.
const NOT_LIKE_RHCOS: &[&str] = &["rpm", "rpm2cpio"];

/// Directories every node has, empty at first.
const NODE_DIRS: &[&str] = &[
    "etc/kubernetes",
    "etc/systemd/system",
    "etc/docker/certs.d",
    "etc/machine-config-daemon",
    "var/lib/mco-conformance/control",
    "run",
    "tmp",
    "var/lib/kubelet",
    "var/log",
];

/// A built (or reused) node image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeImage {
    /// `mco-conformance-node:sha-<hash>`: what a container starts from.
    pub reference: String,
    /// `mco-conformance-node:<version>`, for `FROM` lines.
    pub version_reference: String,
    /// True when an image with this content existed already.
    pub reused: bool,
    /// True when this call laid out a root filesystem to find or make the image; false when an
    /// image built from the same input files was found by its inputs tag.
    pub assembled: bool,
}

impl NodeImage {
    /// How the image came to be, as a run prints it: `built`, `reused` (the same content) or
    /// `reused, built from the same files`.
    pub fn how(&self) -> &'static str {
        match (self.reused, self.assembled) {
            (false, _) => "built",
            (true, true) => "reused",
            (true, false) => "reused, built from the same files",
        }
    }
}

/// The first static busybox on this machine.
pub fn find_busybox() -> Result<PathBuf, ImageError> {
    BUSYBOX_PATHS
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or(ImageError::NoBusybox)
}

/// The shared libraries a dynamically linked binary loads, as `ldd` lists them (absolute
/// paths; none for a static binary).
pub fn shared_libraries(binary: &Path) -> Result<Vec<PathBuf>, ImageError> {
    let out = Command::new("ldd")
        .arg(binary)
        .output()
        .map_err(|e| ImageError::Ldd {
            binary: binary.to_path_buf(),
            message: e.to_string(),
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        if text.contains("not a dynamic executable")
            || String::from_utf8_lossy(&out.stderr).contains("not a dynamic executable")
        {
            return Ok(Vec::new());
        }
        return Err(ImageError::Ldd {
            binary: binary.to_path_buf(),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    let mut libraries = Vec::new();
    for line in text.lines() {
        // `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)` or `/lib64/ld-linux-x86-64.so.2 (0x…)`
        let path = match line.split_once("=>") {
            Some((_, right)) => right.split_whitespace().next(),
            None => line.split_whitespace().next().filter(|p| p.starts_with('/')),
        };
        if let Some(path) = path.filter(|p| p.starts_with('/')) {
            libraries.push(PathBuf::from(path));
        }
        if line.contains("not found") {
            return Err(ImageError::Ldd {
                binary: binary.to_path_buf(),
                message: format!("a library is missing: {}", line.trim()),
            });
        }
    }
    Ok(libraries)
}

/// An I/O error at `path`, for `map_err`.
fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ImageError {
    let path = path.to_path_buf();
    move |e| ImageError::Io(path, e)
}

/// Lay out the node's root filesystem in `root`: the binaries under `/usr/bin`, their
/// libraries at the paths `ldd` names, busybox with a link per applet in `/bin`, the node's
/// empty directories.
pub fn assemble_rootfs(root: &Path, binaries: &[PathBuf], busybox: &Path) -> Result<(), ImageError> {
    let copy = |from: &Path, to: &Path| -> Result<(), ImageError> {
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::copy(from, to).map_err(io(from))?;
        Ok(())
    };
    let mut libraries = BTreeSet::new();
    for binary in binaries {
        let name = binary
            .file_name()
            .ok_or_else(|| ImageError::Io(binary.clone(), std::io::ErrorKind::InvalidInput.into()))?;
        let target = root.join("usr/bin").join(name);
        copy(binary, &target)?;
        // Debug builds carry hundreds of megabytes of debug info a node never reads.
        let _ = Command::new("strip").arg("--strip-debug").arg(&target).status();
        libraries.extend(shared_libraries(binary)?);
    }
    for library in libraries {
        copy(
            &library,
            &root.join(library.strip_prefix("/").unwrap_or(&library)),
        )?;
    }
    copy(busybox, &root.join("bin/busybox"))?;
    link_applets(root, busybox)?;
    // The node tools under the names they answer to, where the image carries them.
    if root.join("usr/bin").join(NODE_TOOLS).is_file() {
        for tool in TOOL_NAMES.iter().chain(IMAGE_TOOL_NAMES) {
            let link = root.join("usr/bin").join(tool);
            std::os::unix::fs::symlink(NODE_TOOLS, &link).map_err(io(&link))?;
        }
    }
    for dir in NODE_DIRS {
        std::fs::create_dir_all(root.join(dir)).map_err(io(&root.join(dir)))?;
    }
    write_users(root)?;
    std::fs::write(
        root.join("etc/os-release"),
        "NAME=\"mco-conformance node\"\nID=mco-conformance\nVERSION_ID=1\n",
    )
    .map_err(io(&root.join("etc/os-release")))?;
    Ok(())
}

/// A link in `/bin` to busybox for each applet it lists, but those a node has from elsewhere or
/// should not have at all.
fn link_applets(root: &Path, busybox: &Path) -> Result<(), ImageError> {
    let applets = Command::new(busybox)
        .arg("--list")
        .output()
        .map_err(io(busybox))?;
    for applet in String::from_utf8_lossy(&applets.stdout).lines().map(str::trim) {
        // The node's own systemctl, journalctl and logger come from the harness, not busybox.
        // Applets that answer as a different tool would are left out: an agent that finds no
        // such tool skips what it needs it for, as upstream's daemon does, where busybox's
        // `rpm` fails `rpm -qf` and degrades the node (release-4.16 file_writers.go:56-72).
        if applet.is_empty()
            || applet == "busybox"
            || TOOL_NAMES.contains(&applet)
            || IMAGE_TOOL_NAMES.contains(&applet)
            || NOT_LIKE_RHCOS.contains(&applet)
            || applet.contains('/')
        {
            continue;
        }
        let link = root.join("bin").join(applet);
        if !link.exists() {
            std::os::unix::fs::symlink("busybox", &link).map_err(io(&link))?;
        }
    }
    Ok(())
}

/// RHCOS's users (the upstream daemon looks up `core`, and creates its ~/.ssh as core); the
/// init gives /home/core to core, as the tar makes every file root's.
fn write_users(root: &Path) -> Result<(), ImageError> {
    for (file, text, mode) in [
        ("etc/passwd", super::users::PASSWD, 0o644),
        ("etc/group", super::users::GROUP, 0o644),
        ("etc/shadow", super::users::SHADOW, 0o400),
    ] {
        let path = root.join(file);
        std::fs::write(&path, text).map_err(io(&path))?;
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(mode))
            .map_err(io(&path))?;
    }
    let home = root.join(super::users::CORE_HOME.trim_start_matches('/'));
    std::fs::create_dir_all(&home).map_err(io(&home))?;
    std::fs::set_permissions(&home, std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .map_err(io(&home))?;
    Ok(())
}

/// A tar of `root` that depends only on its content (sorted names, mtime 0, owner root).
pub fn rootfs_tar(root: &Path) -> Result<Vec<u8>, ImageError> {
    let out = Command::new("tar")
        .args([
            "--sort=name",
            "--mtime=@0",
            "--owner=0",
            "--group=0",
            "--numeric-owner",
            "-C",
        ])
        .arg(root)
        .args(["-cf", "-", "."])
        .output()
        .map_err(|e| ImageError::Io(root.to_path_buf(), e))?;
    if !out.status.success() {
        return Err(ImageError::Io(
            root.to_path_buf(),
            std::io::Error::other(String::from_utf8_lossy(&out.stderr).trim().to_string()),
        ));
    }
    Ok(out.stdout)
}

/// The harness's own binaries a node image carries: its init, its kubelet, its tools and the
/// reference daemon.
pub const NODE_BINARIES: &[&str] = &["mco-node-init", "mco-kubelet", NODE_TOOLS, "mco-reference-daemon"];

/// `NODE_BINARIES` as built beside the running program (a binary in `target/<profile>/`, or a
/// test in `target/<profile>/deps/`), an error naming what is missing and how to build it; and
/// this host's `strace` when it has one, which the crash features run a container node's agent
/// under (without it they say how to install it).
pub fn harness_binaries() -> Result<Vec<PathBuf>, ImageError> {
    let mut binaries = NODE_BINARIES
        .iter()
        .map(|name| super::programs::beside_this_program(name))
        .collect::<Result<Vec<_>, _>>()?;
    binaries.extend(super::crash::strace().ok());
    Ok(binaries)
}

/// What a node image is built from: each input file's path, length and modification time. The
/// same inputs make the same content, so a run that finds an image built from them (in this
/// process or another: the image carries a tag named by them, [`ImageInputs::tag`]) skips the
/// copy, `strip`, `ldd`, `tar` and hash of a rebuild. The harness suite starts a dozen container
/// runs, in its own process and in `mco-conformance` processes it starts; that work was about a
/// twentieth of its CPU.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ImageInputs(Vec<(PathBuf, u64, Option<std::time::SystemTime>)>);

/// What else decides an image's content besides its input files: how it is laid out (this
/// file), the users it carries, the tools' names and the crate's version. A harness that lays
/// images out differently never takes an image tagged by another.
fn recipe() -> String {
    format!(
        "{}\0{}\0{}\0{}\0{:?}\0{:?}\0{}",
        include_str!("image.rs"),
        super::users::PASSWD,
        super::users::GROUP,
        super::users::SHADOW,
        TOOL_NAMES,
        IMAGE_TOOL_NAMES,
        env!("CARGO_PKG_VERSION"),
    )
}

impl ImageInputs {
    pub fn of(files: &[PathBuf]) -> Result<Self, ImageError> {
        files
            .iter()
            .map(|file| {
                let meta = std::fs::metadata(file).map_err(|e| ImageError::Io(file.clone(), e))?;
                Ok((file.clone(), meta.len(), meta.modified().ok()))
            })
            .collect::<Result<_, _>>()
            .map(ImageInputs)
    }

    /// `mco-conformance-node:inputs-<hash>`: the tag an image built from these inputs (by this
    /// harness's recipe) carries beside its content tag.
    pub fn tag(&self) -> String {
        let mut context = ring::digest::Context::new(&ring::digest::SHA256);
        context.update(recipe().as_bytes());
        for (path, len, modified) in &self.0 {
            let nanos = modified
                .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            context.update(path.as_os_str().as_encoded_bytes());
            context.update(&[0]);
            context.update(&len.to_le_bytes());
            context.update(&nanos.to_le_bytes());
        }
        format!("{IMAGE_REPOSITORY}:inputs-{}", short_hash(context))
    }
}

/// The first eight bytes of a digest, in hex: what the image tags are named by.
fn short_hash(context: ring::digest::Context) -> String {
    context.finish().as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `mco-conformance-node:<crate version>`, the tag vendors build `FROM`.
fn version_reference() -> String {
    format!("{IMAGE_REPOSITORY}:{}", env!("CARGO_PKG_VERSION"))
}

/// The image Docker holds under an inputs tag, by its content tag; `None` when there is none.
fn image_tagged(inputs_tag: &str) -> Option<String> {
    let tags = docker(
        &["image", "inspect", "--format", "{{json .RepoTags}}", inputs_tag],
        None,
    )
    .ok()?;
    let tags: Vec<String> = serde_json::from_str(&tags).ok()?;
    let content = format!("{IMAGE_REPOSITORY}:sha-");
    tags.into_iter().find(|t| t.starts_with(&content))
}

/// The node image for `binaries`: the one built from the same inputs while Docker still has it
/// (found by its inputs tag, whichever process built it), else built (or reused by content) by
/// [`build_node_image`] and tagged with its inputs.
pub fn ensure_node_image(binaries: &[PathBuf]) -> Result<NodeImage, ImageError> {
    let busybox = find_busybox()?;
    let inputs_tag = ImageInputs::of(&[binaries, std::slice::from_ref(&busybox)].concat())?.tag();
    let version_reference = version_reference();
    if let Some(reference) = image_tagged(&inputs_tag) {
        // Another run may have moved the version tag to an image of other binaries.
        docker(&["tag", &reference, &version_reference], None)?;
        return Ok(NodeImage {
            reference,
            version_reference,
            reused: true,
            assembled: false,
        });
    }
    let image = build_node_image(binaries)?;
    docker(&["tag", &image.reference, &inputs_tag], None)?;
    Ok(image)
}

/// Build the node image from `binaries`, or reuse an image with the same content (its tag is a
/// hash of the root filesystem and the image configuration).
pub fn build_node_image(binaries: &[PathBuf]) -> Result<NodeImage, ImageError> {
    let busybox = find_busybox()?;
    let dir = tempfile::tempdir().map_err(|e| ImageError::Io(std::env::temp_dir(), e))?;
    assemble_rootfs(dir.path(), binaries, &busybox)?;
    let tar = rootfs_tar(dir.path())?;
    // The image's configuration is part of its content: a changed entrypoint is a new image.
    let changes = [
        "WORKDIR /",
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        r#"ENTRYPOINT ["/usr/bin/mco-node-init"]"#,
    ];
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    context.update(&tar);
    for change in changes {
        context.update(change.as_bytes());
    }
    let reference = format!("{IMAGE_REPOSITORY}:sha-{}", short_hash(context));
    let version_reference = version_reference();
    let reused = docker(&["image", "inspect", "--format", "{{.Id}}", &reference], None).is_ok();
    if !reused {
        let mut args = vec!["import"];
        for change in &changes {
            args.extend(["--change", change]);
        }
        args.extend(["-", &reference]);
        docker(&args, Some(&tar))?;
    }
    docker(&["tag", &reference, &version_reference], None)?;
    Ok(NodeImage {
        reference,
        version_reference,
        reused,
        assembled: true,
    })
}

mod engine;
mod error;
use engine::docker;
pub use engine::{agent_image_command, docker_unavailable, image_id, pid_namespace, remove_orphaned_nodes};
pub use error::{BUSYBOX_PATHS, ImageError};

#[cfg(test)]
mod tests;
