//! The fan-out bench's client socket: a TCP stream whose reads keep the kernel's receive
//! timestamp (`SO_TIMESTAMPNS`) of the bytes they return.

use anyhow::{Context, Result};

/// A client's TCP stream whose reads keep the kernel's receive timestamp of the bytes they
/// return (`SO_TIMESTAMPNS`: when the segment was queued for this socket).
pub(crate) struct Stamped {
    tcp: tokio::net::TcpStream,
    /// Unix nanoseconds of the last read that returned bytes.
    pub(crate) last_stamp: Option<u128>,
}

impl Stamped {
    pub(crate) fn new(tcp: tokio::net::TcpStream) -> Result<Self> {
        use std::os::fd::AsRawFd as _;
        let on: libc::c_int = 1;
        // SAFETY: a valid descriptor, and an int option read from a live local.
        let rc = unsafe {
            libc::setsockopt(
                tcp.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error()).context("SO_TIMESTAMPNS");
        }
        Ok(Self {
            tcp,
            last_stamp: None,
        })
    }
}

/// One `recvmsg` into `out`: the bytes read and the receive timestamp the kernel attached.
fn recv_stamped(fd: std::os::fd::RawFd, out: &mut [u8]) -> std::io::Result<(usize, Option<u128>)> {
    let mut iov = libc::iovec {
        iov_base: out.as_mut_ptr().cast(),
        iov_len: out.len(),
    };
    // Room for a few control messages, aligned as cmsghdr needs.
    let mut control = [0u64; 16];
    // SAFETY: msghdr is plain data; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: msg points at the live iovec and control buffer above.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: the kernel filled msg's control buffer; the CMSG_* macros walk it within
    // msg_controllen, and the timestamp is read unaligned from its payload.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                stamp = Some(ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128);
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((n as usize, stamp))
}

impl tokio::io::AsyncRead for Stamped {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::os::fd::AsRawFd as _;
        use std::task::Poll;
        loop {
            match self.tcp.poll_read_ready(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
            let fd = self.tcp.as_raw_fd();
            let unfilled = buf.initialize_unfilled();
            match self
                .tcp
                .try_io(tokio::io::Interest::READABLE, || recv_stamped(fd, unfilled))
            {
                Ok((n, stamp)) => {
                    if n > 0 && stamp.is_some() {
                        self.last_stamp = stamp;
                    }
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl tokio::io::AsyncWrite for Stamped {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}
