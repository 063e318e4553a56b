//! The protobuf wire format as Kubernetes' generated decoders read it (gogo-protobuf's
//! `Unmarshal` methods in every `generated.pb.go`), with their errors word for word: what they
//! accept, what they skip and in what order they give up is what kube-apiserver answers a
//! malformed body with. Reading only; what the fields mean is `schema`'s.

use std::fmt;

/// Why a generated decoder gave up (the `generated.pb.go` errors, and `io.ErrUnexpectedEOF`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum WireError {
    UnexpectedEof,
    IntOverflow,
    InvalidLength,
    UnexpectedEndOfGroup,
    IllegalWireType(u64),
    /// A field tagged with wire type 4 (end group) in message `.0`.
    EndGroupForNonGroup(&'static str),
    /// A field number of zero or less (after Go's `int32` conversion) in `message`; `wire` is
    /// the whole tag, as the generated code prints it.
    IllegalTag {
        message: &'static str,
        field: i32,
        wire: u64,
    },
    /// A known field sent with another wire type; `field` is the Go struct field's name.
    WrongWireType {
        wire_type: u64,
        field: &'static str,
    },
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::UnexpectedEof => f.write_str("unexpected EOF"),
            WireError::IntOverflow => f.write_str("proto: integer overflow"),
            WireError::InvalidLength => f.write_str("proto: negative length found during unmarshaling"),
            WireError::UnexpectedEndOfGroup => f.write_str("proto: unexpected end of group"),
            WireError::IllegalWireType(t) => write!(f, "proto: illegal wireType {t}"),
            WireError::EndGroupForNonGroup(m) => write!(f, "proto: {m}: wiretype end group for non-group"),
            WireError::IllegalTag { message, field, wire } => {
                write!(f, "proto: {message}: illegal tag {field} (wire type {wire})")
            }
            WireError::WrongWireType { wire_type, field } => {
                write!(f, "proto: wrong wireType = {wire_type} for field {field}")
            }
        }
    }
}

pub(super) type Result<T> = std::result::Result<T, WireError>;

/// A varint at `*at`, as the generated loops read one: ten bytes at most (an eleventh is an
/// overflow), bits past the 64th dropped.
pub(super) fn varint(data: &[u8], at: &mut usize) -> Result<u64> {
    let mut value = 0u64;
    let mut shift = 0u32;
    loop {
        if shift >= 64 {
            return Err(WireError::IntOverflow);
        }
        let Some(&b) = data.get(*at) else {
            return Err(WireError::UnexpectedEof);
        };
        *at += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Ok(value);
        }
        shift += 7;
    }
}

/// A length-delimited payload at `*at` whose length varint has been read as Go's `int`:
/// negative, or past the end of `data` once added, as the generated code checks it.
pub(super) fn delimited<'a>(data: &'a [u8], at: &mut usize) -> Result<&'a [u8]> {
    let length = varint(data, at)? as i64;
    let end = end_of(*at, length, data.len())?;
    let payload = &data[*at..end];
    *at = end;
    Ok(payload)
}

/// `start + length` within `limit`: a negative length or sum is `InvalidLength`, one past the
/// limit `UnexpectedEof`.
fn end_of(start: usize, length: i64, limit: usize) -> Result<usize> {
    if length < 0 {
        return Err(WireError::InvalidLength);
    }
    let end = (start as i64).wrapping_add(length);
    if end < 0 {
        return Err(WireError::InvalidLength);
    }
    if end as u64 > limit as u64 {
        return Err(WireError::UnexpectedEof);
    }
    Ok(end as usize)
}

/// One field's tag: its number (the tag shifted, then cut to Go's `int32`) and wire type,
/// refused as the generated code refuses a group end or a number of zero or less.
pub(super) fn tag(data: &[u8], at: &mut usize, message: &'static str) -> Result<(i32, u64)> {
    let wire = varint(data, at)?;
    let field = (wire >> 3) as i32;
    let wire_type = wire & 7;
    if wire_type == 4 {
        return Err(WireError::EndGroupForNonGroup(message));
    }
    if field <= 0 {
        return Err(WireError::IllegalTag { message, field, wire });
    }
    Ok((field, wire_type))
}

/// Skip the field whose tag starts at `start` (`skipGenerated`), which must end within `limit`;
/// returns where the next field starts.
pub(super) fn skip(data: &[u8], start: usize, limit: usize) -> Result<usize> {
    let rest = &data[start..];
    let length = skip_length(rest)?;
    let end = (start as i64).wrapping_add(length);
    if length < 0 || end < 0 {
        return Err(WireError::InvalidLength);
    }
    if end as u64 > limit as u64 {
        return Err(WireError::UnexpectedEof);
    }
    Ok(end as usize)
}

/// `skipGenerated`: how many bytes the field at the start of `data` takes, groups included.
/// Fixed-size fields are not checked against the end here; the caller checks the sum.
fn skip_length(data: &[u8]) -> Result<i64> {
    let mut at: i64 = 0;
    let mut depth = 0u32;
    let len = data.len() as i64;
    while at < len {
        let mut i = at as usize;
        let wire = varint(data, &mut i)?;
        at = i as i64;
        match wire & 7 {
            0 => {
                let mut shift = 0u32;
                loop {
                    if shift >= 64 {
                        return Err(WireError::IntOverflow);
                    }
                    if at >= len {
                        return Err(WireError::UnexpectedEof);
                    }
                    at += 1;
                    if data[(at - 1) as usize] < 0x80 {
                        break;
                    }
                    shift += 7;
                }
            }
            1 => at = at.wrapping_add(8),
            2 => {
                let mut i = at as usize;
                let length = varint(data, &mut i)? as i64;
                at = i as i64;
                if length < 0 {
                    return Err(WireError::InvalidLength);
                }
                at = at.wrapping_add(length);
            }
            3 => depth += 1,
            4 => {
                if depth == 0 {
                    return Err(WireError::UnexpectedEndOfGroup);
                }
                depth -= 1;
            }
            5 => at = at.wrapping_add(4),
            other => return Err(WireError::IllegalWireType(other)),
        }
        if at < 0 {
            return Err(WireError::InvalidLength);
        }
        if depth == 0 {
            return Ok(at);
        }
    }
    Err(WireError::UnexpectedEof)
}

/// Writing, for answers: a field's tag, a varint, a length-delimited payload.
pub(super) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

pub(super) fn put_tag(out: &mut Vec<u8>, field: i32, wire_type: u64) {
    put_varint(out, ((field as u64) << 3) | wire_type);
}

pub(super) fn put_delimited(out: &mut Vec<u8>, field: i32, payload: &[u8]) {
    put_tag(out, field, 2);
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_read_as_the_generated_loops_read_them() {
        let read = |bytes: &[u8]| varint(bytes, &mut 0);
        assert_eq!(read(&[0x96, 0x01]), Ok(150));
        assert_eq!(read(&[0x80]), Err(WireError::UnexpectedEof));
        assert_eq!(read(&[0xff; 10]), Err(WireError::IntOverflow));
        // Ten bytes end it; the tenth byte's bits past the 64th are dropped.
        let mut max = vec![0xff; 9];
        max.push(0x7f);
        assert_eq!(read(&max), Ok(u64::MAX));
    }

    #[test]
    fn lengths_are_go_ints() {
        // A length with its top bit set is negative.
        let mut negative = vec![0xff; 9];
        negative.push(0x01);
        assert_eq!(delimited(&negative, &mut 0), Err(WireError::InvalidLength));
        assert_eq!(delimited(&[0x05, b'a'], &mut 0), Err(WireError::UnexpectedEof));
        assert_eq!(delimited(&[0x01, b'a'], &mut 0), Ok(&b"a"[..]));
    }

    #[test]
    fn tags_refuse_what_the_generated_code_refuses() {
        assert_eq!(
            tag(&[0x0c], &mut 0, "ConfigMap"),
            Err(WireError::EndGroupForNonGroup("ConfigMap"))
        );
        assert_eq!(
            tag(&[0x02], &mut 0, "ConfigMap"),
            Err(WireError::IllegalTag {
                message: "ConfigMap",
                field: 0,
                wire: 2
            })
        );
        assert_eq!(
            WireError::IllegalTag {
                message: "ConfigMap",
                field: 0,
                wire: 2
            }
            .to_string(),
            "proto: ConfigMap: illegal tag 0 (wire type 2)"
        );
        // A number past int32 wraps, as Go's conversion does.
        let mut at = 0;
        let mut wrapped = Vec::new();
        put_varint(&mut wrapped, (((1u64 << 32) + 1) << 3) | 2);
        assert_eq!(tag(&wrapped, &mut at, "ConfigMap"), Ok((1, 2)));
    }

    #[test]
    fn skipping_follows_skip_generated() {
        // A varint field, a fixed64, a group, and their failures.
        assert_eq!(skip(&[0x08, 0x96, 0x01], 0, 3), Ok(3));
        assert_eq!(skip(&[0x09, 1, 2, 3, 4, 5, 6, 7, 8], 0, 9), Ok(9));
        assert_eq!(skip(&[0x09, 1, 2], 0, 3), Err(WireError::UnexpectedEof));
        assert_eq!(skip(&[0x0b, 0x08, 0x01, 0x0c], 0, 4), Ok(4));
        assert_eq!(skip(&[0x0b, 0x08, 0x01], 0, 3), Err(WireError::UnexpectedEof));
        assert_eq!(skip(&[0x0e], 0, 1), Err(WireError::IllegalWireType(6)));
        assert_eq!(
            WireError::IllegalWireType(6).to_string(),
            "proto: illegal wireType 6"
        );
    }
}
