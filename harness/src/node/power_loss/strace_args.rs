//! strace's notation read back: a call's arguments split at the top level, quoted strings with
//! their escapes (`-x`: `\\xNN`; paths in `<…>` with octal escapes), numbers, iovec arrays.

pub(super) fn str_arg(arg: Option<&Arg>) -> Result<&[u8], String> {
    match arg {
        Some(Arg::Str(bytes, _)) => Ok(bytes),
        _ => Err("a path argument strace did not print as a string".into()),
    }
}

/// The bytes of a `writev` iovec array, in order (`None` if one was cut short).
pub(super) fn iov_bytes(arg: Option<&Arg>) -> Option<Vec<u8>> {
    let Some(Arg::Other(text)) = arg else {
        return None;
    };
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("iov_base=\"") {
        let (bytes, truncated, used) = unquote(&rest[i + 9..])?;
        if truncated {
            return None;
        }
        out.extend(bytes);
        rest = &rest[i + 9 + used..];
    }
    Some(out)
}

/// `a/./b//c/../d` → `a/b/d`.
pub(super) fn normalise(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

/// One argument as strace printed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Arg {
    /// `3</path>` or `AT_FDCWD</cwd>` (fd `u32::MAX`).
    Fd {
        fd: u32,
        path: Option<String>,
    },
    /// A quoted string, and whether strace cut it (`"…"...`).
    Str(Vec<u8>, bool),
    Other(String),
}

impl Arg {
    pub(super) fn number(&self) -> Option<u64> {
        match self {
            Arg::Other(s) => parse_number(s),
            Arg::Fd { fd, .. } if *fd != u32::MAX => Some(u64::from(*fd)),
            _ => None,
        }
    }

    pub(super) fn signed(&self) -> Option<i64> {
        match self {
            Arg::Other(s) => s
                .strip_prefix('-')
                .and_then(parse_number)
                .map(|v| -(v as i64))
                .or_else(|| parse_number(s).map(|v| v as i64)),
            Arg::Fd { .. } => self.number().map(|v| v as i64),
            Arg::Str(..) => None,
        }
    }

    pub(super) fn is_cwd(&self) -> bool {
        matches!(self, Arg::Fd { fd, .. } if *fd == u32::MAX)
    }
}

/// `0644` (octal), `0x1f`, `42`; strace's `[42]` for a pointed-to value.
fn parse_number(s: &str) -> Option<u64> {
    let s = s.trim().trim_start_matches('[').trim_end_matches(']');
    if let Some(hex) = s.strip_prefix("0x") {
        u64::from_str_radix(hex, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

pub(super) struct Parsed {
    pub(super) args: Vec<Arg>,
    pub(super) result: Option<Arg>,
}

/// `name(arg, arg, …) = result`, split at the top level (strings, `<…>`, brackets kept whole).
pub(super) fn parse_call(line: &str) -> Option<Parsed> {
    let open = line.find('(')?;
    let body = &line[open + 1..];
    let mut args: Vec<&str> = Vec::new();
    let (mut depth, mut start, mut end) = (0usize, 0usize, None);
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'<' => {
                while i < bytes.len() && bytes[i] != b'>' {
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' => depth += 1,
            b']' | b'}' => depth = depth.saturating_sub(1),
            b')' if depth == 0 => {
                end = Some(i);
                break;
            }
            b')' => depth -= 1,
            b',' if depth == 0 => {
                args.push(body[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let end = end?;
    let last = body[start..end].trim();
    if !last.is_empty() {
        args.push(last);
    }
    let result = body[end + 1..]
        .trim_start()
        .strip_prefix('=')
        .map(|r| arg(r.trim()));
    Some(Parsed {
        args: args.into_iter().map(arg).collect(),
        result,
    })
}

fn arg(text: &str) -> Arg {
    if let Some((bytes, truncated, _)) = unquote(text) {
        return Arg::Str(bytes, truncated);
    }
    if let Some(lt) = text.find('<')
        && text.ends_with('>')
    {
        let head = &text[..lt];
        let fd = if head == "AT_FDCWD" {
            Some(u32::MAX)
        } else {
            head.parse().ok()
        };
        if let Some(fd) = fd {
            let path = unescape(&text[lt + 1..text.len() - 1]);
            return Arg::Fd {
                fd,
                path: Some(String::from_utf8_lossy(&path).into_owned()),
            };
        }
    }
    Arg::Other(text.to_string())
}

/// A quoted string from its opening quote: its bytes, whether strace cut it (`...` after the
/// closing quote), and how many characters it took.
fn unquote(text: &str) -> Option<(Vec<u8>, bool, usize)> {
    let body = text.strip_prefix('"')?;
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() && bytes[i] != b'"' {
        if bytes[i] == b'\\' {
            i += 1;
        }
        i += 1;
    }
    if i >= bytes.len() {
        return None;
    }
    let truncated = body[i + 1..].starts_with("...");
    Some((unescape(&body[..i]), truncated, i + 2))
}

/// strace's escapes: `\n \t \r \v \f \\ \"`, `\xHH` and octal `\NNN`.
fn unescape(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' || i + 1 == bytes.len() {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let c = bytes[i + 1];
        i += 2;
        match c {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'v' => out.push(0x0b),
            b'f' => out.push(0x0c),
            b'x' => {
                let end = (i + 2).min(bytes.len());
                let hex = std::str::from_utf8(&bytes[i..end]).unwrap_or("");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(0));
                i = end;
            }
            b'0'..=b'7' => {
                let mut value = u32::from(c - b'0');
                let mut n = 1;
                while n < 3 && i < bytes.len() && (b'0'..=b'7').contains(&bytes[i]) {
                    value = value * 8 + u32::from(bytes[i] - b'0');
                    i += 1;
                    n += 1;
                }
                out.push(value as u8);
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strace_strings_paths_and_iovecs_read_back_as_bytes() {
        let parsed = parse_call(
            r#"writev(4</tmp/a\74b\76 c>, [{iov_base="ab", iov_len=2}, {iov_base="\x00\xff\"", iov_len=3}], 2) = 5"#,
        )
        .unwrap();
        assert_eq!(
            parsed.args[0],
            Arg::Fd {
                fd: 4,
                path: Some("/tmp/a<b> c".into())
            }
        );
        assert_eq!(iov_bytes(parsed.args.get(1)), Some(b"ab\x00\xff\"".to_vec()));
        assert_eq!(parsed.result.and_then(|r| r.number()), Some(5));
        let cut = parse_call(r#"write(3</x>, "abc"..., 100) = 100"#).unwrap();
        assert_eq!(cut.args[1], Arg::Str(b"abc".to_vec(), true));
        assert_eq!(unescape(r"a\n\t\\\101"), b"a\n\t\\A".to_vec());
        assert_eq!(normalise("/a/./b//c/../d"), "/a/b/d");
    }
}
