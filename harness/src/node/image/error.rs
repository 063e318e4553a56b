//! What building, finding or running the node image can fail with, and where a static busybox
//! is looked for (which the error names). The image and the Docker engine code both return it;
//! it must not reach for either.

use std::path::PathBuf;

/// Where a static busybox is looked for (Debian's `busybox-static` installs `/bin/busybox`).
pub const BUSYBOX_PATHS: &[&str] = &["/bin/busybox", "/usr/bin/busybox"];

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error(
        "no static busybox at {}: install Debian's busybox-static (apt-get install busybox-static); the node image needs it for /bin/sh and coreutils",
        BUSYBOX_PATHS.join(" or ")
    )]
    NoBusybox,
    #[error("{binary}: ldd: {message}")]
    Ldd { binary: PathBuf, message: String },
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error(
        "{} is not built: build the harness binaries first (cargo build -p harness --bins, with --release for a release run)",
        .0.display()
    )]
    MissingBinary(PathBuf),
    #[error("docker {command}: {message}")]
    Docker { command: String, message: String },
}
