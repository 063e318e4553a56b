//! The node's systemd private bus, `/run/systemd/private`: the peer-to-peer D-Bus socket
//! systemd answers on without a bus daemon. MCO `main`'s daemon lists the unit files over it
//! before it writes units (pkg/daemon/update.go `listSystemdUnits`, through go-systemd's
//! `NewSystemdConnectionContext`: EXTERNAL authentication, no `Hello`, then `AddMatch` for
//! `JobRemoved` on a second connection).
//!
//! Answered, from the node's service manager:
//! - `org.freedesktop.systemd1.Manager.ListUnitFiles` → `a(ss)`: each unit file's path
//!   (`/etc/systemd/system/<unit>`) and state (`enabled`, `disabled`);
//! - `org.freedesktop.DBus.AddMatch` / `RemoveMatch` (no signals are ever sent) and
//!   `org.freedesktop.DBus.Peer.Ping`: an empty reply;
//! - anything else: the error `org.freedesktop.DBus.Error.UnknownMethod`.
//!
//! The wire format is D-Bus's (specification 0.41, "Message Protocol"), little-endian only.

use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

/// Where systemd's private bus listens.
pub const PRIVATE_BUS: &str = "/run/systemd/private";

/// The unit files a node has: (unit name, enabled).
pub type UnitFiles = Arc<dyn Fn() -> Vec<(String, bool)> + Send + Sync>;

/// Answer every connection on `listener` until `stop`.
pub async fn serve(listener: UnixListener, units: UnitFiles, stop: CancellationToken) {
    loop {
        let stream = tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
        };
        let units = units.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = connection(stream, units) => {}
            }
        });
    }
}

/// One client: the SASL exchange, then method calls until it hangs up. Any malformed input
/// ends the connection.
async fn connection(stream: UnixStream, units: UnitFiles) -> std::io::Result<()> {
    let mut stream = BufReader::new(stream);
    let mut nul = [0u8; 1];
    stream.read_exact(&mut nul).await?;
    if nul[0] != 0 {
        return Ok(());
    }
    loop {
        let mut line = Vec::new();
        if stream.read_until(b'\n', &mut line).await? == 0 || line.len() > 16 * 1024 {
            return Ok(());
        }
        let line = String::from_utf8_lossy(&line);
        let words: Vec<&str> = line.split_whitespace().collect();
        let reply = match words.as_slice() {
            ["AUTH", "EXTERNAL", ..] => "OK 6d636f2d636f6e666f726d616e636521\r\n",
            ["AUTH", ..] => "REJECTED EXTERNAL\r\n",
            ["NEGOTIATE_UNIX_FD"] => "AGREE_UNIX_FD\r\n",
            ["BEGIN"] => break,
            _ => "ERROR\r\n",
        };
        stream.get_mut().write_all(reply.as_bytes()).await?;
    }
    let mut serial = 0u32;
    loop {
        let mut fixed = [0u8; 16];
        if stream.read_exact(&mut fixed).await.is_err() {
            return Ok(());
        }
        if fixed[0] != b'l' {
            return Ok(()); // big-endian peers: not on this node's x86 clients
        }
        let word = |at: usize| u32::from_le_bytes([fixed[at], fixed[at + 1], fixed[at + 2], fixed[at + 3]]);
        let (kind, flags, body_len, call_serial, fields_len) =
            (fixed[1], fixed[2], word(4), word(8), word(12));
        if body_len > 1 << 20 || fields_len > 1 << 16 {
            return Ok(());
        }
        let fields_padded = (fields_len as usize).div_ceil(8) * 8;
        let mut rest = vec![0u8; fields_padded + body_len as usize];
        stream.read_exact(&mut rest).await?;
        if kind != 1 || flags & 0x1 != 0 {
            continue; // not a method call, or no reply expected
        }
        let Some(call) = parse_fields(&rest[..fields_len as usize]) else {
            return Ok(());
        };
        serial += 1;
        let reply = answer(&call, call_serial, serial, &units);
        stream.get_mut().write_all(&reply).await?;
    }
}

/// The header fields of a call that matter here.
#[derive(Debug, Default, PartialEq, Eq)]
struct Call {
    interface: String,
    member: String,
}

fn answer(call: &Call, reply_to: u32, serial: u32, units: &UnitFiles) -> Vec<u8> {
    match (call.interface.as_str(), call.member.as_str()) {
        ("org.freedesktop.systemd1.Manager" | "", "ListUnitFiles") => {
            let mut body = Writer::default();
            let length_at = body.u32_placeholder();
            body.align(8);
            let start = body.0.len();
            for (unit, enabled) in units() {
                body.align(8);
                body.string(&format!("/etc/systemd/system/{unit}"));
                body.string(if enabled { "enabled" } else { "disabled" });
            }
            let length = (body.0.len() - start) as u32;
            body.0[length_at..length_at + 4].copy_from_slice(&length.to_le_bytes());
            method_return(reply_to, serial, "a(ss)", &body.0)
        }
        ("org.freedesktop.DBus", "AddMatch" | "RemoveMatch") | ("org.freedesktop.DBus.Peer", "Ping") => {
            method_return(reply_to, serial, "", &[])
        }
        _ => {
            let mut body = Writer::default();
            body.string(&format!(
                "Unknown method {}.{} (this node's systemd answers ListUnitFiles only)",
                call.interface, call.member
            ));
            let mut fields = Writer::default();
            fields.field_string(4, "org.freedesktop.DBus.Error.UnknownMethod");
            fields.field_u32(5, reply_to);
            fields.field_signature(8, "s");
            message(3, serial, fields, &body.0)
        }
    }
}

fn method_return(reply_to: u32, serial: u32, signature: &str, body: &[u8]) -> Vec<u8> {
    let mut fields = Writer::default();
    fields.field_u32(5, reply_to);
    if !signature.is_empty() {
        fields.field_signature(8, signature);
    }
    message(2, serial, fields, body)
}

/// A whole message: the fixed header, the header fields (already marshalled as the array's
/// elements, starting 8-aligned at offset 16), padding to 8, the body.
fn message(kind: u8, serial: u32, fields: Writer, body: &[u8]) -> Vec<u8> {
    let mut out = vec![b'l', kind, 0, 1];
    out.extend((body.len() as u32).to_le_bytes());
    out.extend(serial.to_le_bytes());
    out.extend((fields.0.len() as u32).to_le_bytes());
    out.extend(&fields.0);
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
    out.extend(body);
    out
}

/// Marshalling, with alignment relative to the start of what is written (a message's fields
/// start at offset 16 and its body at a multiple of 8, so relative and absolute agree).
#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn align(&mut self, n: usize) {
        while !self.0.len().is_multiple_of(n) {
            self.0.push(0);
        }
    }
    fn u32_placeholder(&mut self) -> usize {
        self.align(4);
        let at = self.0.len();
        self.0.extend([0; 4]);
        at
    }
    fn u32(&mut self, v: u32) {
        self.align(4);
        self.0.extend(v.to_le_bytes());
    }
    fn string(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend(s.as_bytes());
        self.0.push(0);
    }
    fn signature(&mut self, s: &str) {
        self.0.push(s.len() as u8);
        self.0.extend(s.as_bytes());
        self.0.push(0);
    }
    fn field(&mut self, code: u8, signature: &str) {
        self.align(8);
        self.0.push(code);
        self.signature(signature);
    }
    fn field_string(&mut self, code: u8, v: &str) {
        self.field(code, "s");
        self.string(v);
    }
    fn field_u32(&mut self, code: u8, v: u32) {
        self.field(code, "u");
        self.u32(v);
    }
    fn field_signature(&mut self, code: u8, v: &str) {
        self.field(code, "g");
        self.signature(v);
    }
}

/// INTERFACE and MEMBER from a message's header fields (the array's elements, offsets
/// relative to 16, which is 8-aligned); `None` if they do not parse.
fn parse_fields(bytes: &[u8]) -> Option<Call> {
    let mut call = Call::default();
    let mut at = 0usize;
    let align = |at: usize, n: usize| at.div_ceil(n) * n;
    let u32_at =
        |at: usize| -> Option<u32> { Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?)) };
    while at < bytes.len() {
        at = align(at, 8);
        if at >= bytes.len() {
            break;
        }
        let code = *bytes.get(at)?;
        let sig_len = usize::from(*bytes.get(at + 1)?);
        let signature = bytes.get(at + 2..at + 2 + sig_len)?.to_vec();
        at += 2 + sig_len + 1;
        match signature.as_slice() {
            b"s" | b"o" => {
                at = align(at, 4);
                let len = u32_at(at)? as usize;
                let text = String::from_utf8(bytes.get(at + 4..at + 4 + len)?.to_vec()).ok()?;
                at += 4 + len + 1;
                match code {
                    2 => call.interface = text,
                    3 => call.member = text,
                    _ => {}
                }
            }
            b"g" => {
                let len = usize::from(*bytes.get(at)?);
                at += 1 + len + 1;
            }
            b"u" => at = align(at, 4) + 4,
            _ => return None,
        }
    }
    Some(call)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_header_parses_and_a_list_reply_is_laid_out_as_dbus_says() {
        // PATH, INTERFACE, MEMBER as a client marshals them.
        let mut fields = Writer::default();
        fields.field(1, "o");
        fields.string("/org/freedesktop/systemd1");
        fields.field_string(2, "org.freedesktop.systemd1.Manager");
        fields.field_string(3, "ListUnitFiles");
        let call = parse_fields(&fields.0).unwrap();
        assert_eq!(call.interface, "org.freedesktop.systemd1.Manager");
        assert_eq!(call.member, "ListUnitFiles");
        assert!(
            parse_fields(&[1, 1, b'v', 0]).is_none(),
            "a variant field is refused"
        );

        let units: UnitFiles = Arc::new(|| vec![("kubelet.service".into(), true)]);
        let reply = answer(&call, 7, 1, &units);
        assert_eq!(&reply[..4], &[b'l', 2, 0, 1]);
        let body_len = u32::from_le_bytes(reply[4..8].try_into().unwrap()) as usize;
        let body = &reply[reply.len() - body_len..];
        // a(ss): array length, pad to 8, then the struct's two strings.
        let path = "/etc/systemd/system/kubelet.service";
        let array_len = u32::from_le_bytes(body[..4].try_into().unwrap()) as usize;
        let first = (4 + path.len() + 1).div_ceil(4) * 4;
        assert_eq!(array_len, first + 4 + "enabled".len() + 1);
        assert_eq!(&body[12..12 + path.len()], path.as_bytes());
        assert_eq!((reply.len() - body_len) % 8, 0, "the body starts 8-aligned");
    }
}
