//! A CA bundle file read as the kubelet reads its client CA file: Go's `encoding/pem` `Decode`
//! block by block, then client-go's `cert.ParseCertsPEM` over the blocks (Kubernetes 1.25–1.29
//! `dynamic_cafile_content.go` `newCABundleAndVerifier` → `cert.NewPoolFromBytes`). The fake
//! kubelet goes by it to decide whether a changed file replaces the bundle it verifies with, so
//! a half-written file is judged as a real kubelet judges it. Written from the rules those
//! functions document and follow, not from their code:
//!
//! - A block opens with `-----BEGIN <type>-----` at the start of the data or of a line, may
//!   carry `key: value` header lines, and closes with `-----END <type>-----` and nothing but
//!   blanks after it on that line; its body is base64 (blanks and line breaks ignored).
//! - Data that ends inside a block's header lines ends the reading (no block). A candidate that
//!   has no closing line, a closing line of another type, text after it, or a body that is not
//!   base64 is skipped: the search goes on from the line after the opening one.
//! - Reading stops at the first place no further block is found: text that is not PEM, before
//!   or after the blocks, is ignored, and so is a block cut off at the end of the file.
//! - Only `CERTIFICATE` blocks without headers count. One whose DER does not parse as a
//!   certificate fails the whole file; so does a file with no certificate at all.
//!
//! So a file cut short inside its first certificate does not load (the kubelet keeps the bundle
//! it had), while one cut short after a whole certificate loads with the whole certificates
//! before the cut.

/// Why the kubelet would not load the file, in client-go's and Go's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GoPemError {
    /// client-go `ParseCertsPEM` with no certificate block (Kubernetes 1.25–1.29 wording).
    #[error("data does not contain any valid RSA or ECDSA certificates")]
    NoCertificates,
    /// A `CERTIFICATE` block whose DER Go's `x509.ParseCertificate` refuses.
    #[error("x509: malformed certificate")]
    Malformed,
}

const BEGIN: &[u8] = b"-----BEGIN ";
const END: &[u8] = b"\n-----END ";
const DASHES: &[u8] = b"-----";

/// One PEM block as Go's `pem.Decode` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Block {
    kind: String,
    has_headers: bool,
    der: Vec<u8>,
}

/// Go's `getLine`: the line at the start of `data` without its line break (a `\r` right
/// before it included) and trailing spaces and tabs, and what follows the line break.
fn line(data: &[u8]) -> (&[u8], &[u8]) {
    let (line, rest) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => {
            let line = &data[..i];
            (line.strip_suffix(b"\r").unwrap_or(line), &data[i + 1..])
        }
        None => (data, &data[data.len()..]),
    };
    let end = line
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t'))
        .map_or(0, |i| i + 1);
    (&line[..end], rest)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Go's `pem.Decode`: the first block of `data` and what follows it, or `None` when no block
/// is found.
fn decode(data: &[u8]) -> Option<(Block, &[u8])> {
    let mut rest = data;
    loop {
        if let Some(after) = rest.strip_prefix(BEGIN) {
            rest = after;
        } else {
            let at = find(rest, b"\n-----BEGIN ")?;
            rest = &rest[at + 1 + BEGIN.len()..];
        }
        let (type_line, after_type) = line(rest);
        rest = after_type;
        let Some(kind) = type_line.strip_suffix(DASHES) else {
            continue;
        };
        let mut has_headers = false;
        loop {
            if rest.is_empty() {
                return None;
            }
            let (header, next) = line(rest);
            if !header.contains(&b':') {
                break;
            }
            has_headers = true;
            rest = next;
        }
        let (end_at, trailer_at) = if !has_headers && rest.starts_with(&END[1..]) {
            (0, END.len() - 1)
        } else {
            match find(rest, END) {
                Some(i) => (i, i + END.len()),
                None => continue,
            }
        };
        let trailer = &rest[trailer_at..];
        let trailer_len = kind.len() + DASHES.len();
        if trailer.len() < trailer_len
            || !trailer[..trailer_len].starts_with(kind)
            || !trailer[..trailer_len].ends_with(DASHES)
            || !line(&trailer[trailer_len..]).0.is_empty()
        {
            continue;
        }
        let body: Vec<u8> = rest[..end_at]
            .iter()
            .copied()
            .filter(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
            .collect();
        let Ok(der) = base64_std(&body) else {
            continue;
        };
        let (_, after) = line(&rest[trailer_at..]);
        let block = Block {
            kind: String::from_utf8_lossy(kind).into_owned(),
            has_headers,
            der,
        };
        return Some((block, after));
    }
}

/// Go's `base64.StdEncoding`: padded, trailing bits not checked.
fn base64_std(text: &[u8]) -> Result<Vec<u8>, base64::DecodeError> {
    use base64::Engine;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const GO_STD: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
    );
    GO_STD.decode(text)
}

/// The certificates (DER) the kubelet would load from a CA bundle file's bytes, or why it would
/// keep the bundle it had. An empty file is the caller's to refuse first (the kubelet says
/// "missing content" before it parses).
pub fn go_ca_bundle(data: &[u8]) -> Result<Vec<Vec<u8>>, GoPemError> {
    let mut certs = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let Some((block, after)) = decode(rest) else {
            break;
        };
        rest = after;
        if block.kind != "CERTIFICATE" || block.has_headers {
            continue;
        }
        match x509_parser::parse_x509_certificate(&block.der) {
            Ok(([], _)) => certs.push(block.der),
            _ => return Err(GoPemError::Malformed),
        }
    }
    if certs.is_empty() {
        return Err(GoPemError::NoCertificates);
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::{SIMULATION_EPOCH, Signer};

    fn pem(serial: u64) -> String {
        Signer::issue_named("signer", SIMULATION_EPOCH, time::Duration::days(1), serial)
            .unwrap()
            .cert
            .pem
    }

    fn der_of(pem: &str) -> Vec<u8> {
        crate::pki::parse_certs(pem).unwrap().remove(0).der
    }

    /// What the kubelet loads from a file, by how it was written or cut short.
    #[test]
    fn a_file_loads_as_the_go_kubelet_reads_it() {
        let (one, two) = (pem(1), pem(2));
        let (a, b) = (der_of(&one), der_of(&two));
        // Where the second certificate's body is cut: inside it, after its last base64 line.
        let cut_in_two = &two[..two.len() / 2];
        let without_end = &two[..two.find("-----END").unwrap()];
        type Row<'a> = (&'a str, String, Result<Vec<Vec<u8>>, GoPemError>);
        let table: Vec<Row> = vec![
            ("one certificate", one.clone(), Ok(vec![a.clone()])),
            ("two", format!("{one}{two}"), Ok(vec![a.clone(), b.clone()])),
            ("CRLF line ends", one.replace('\n', "\r\n"), Ok(vec![a.clone()])),
            (
                "no final line break",
                one.trim_end().to_string(),
                Ok(vec![a.clone()]),
            ),
            (
                "text before and after",
                format!("# bundle\n{one}trailing words\n"),
                Ok(vec![a.clone()]),
            ),
            (
                "bytes after a whole certificate",
                format!("{one}\u{1}\u{2}garbage"),
                Ok(vec![a.clone()]),
            ),
            (
                "a second one cut short",
                format!("{one}{cut_in_two}"),
                Ok(vec![a.clone()]),
            ),
            (
                "a second one without its END line",
                format!("{one}{without_end}"),
                Ok(vec![a.clone()]),
            ),
            (
                "the only one cut short",
                cut_in_two.to_string(),
                Err(GoPemError::NoCertificates),
            ),
            (
                "the only one without its END line",
                without_end.to_string(),
                Err(GoPemError::NoCertificates),
            ),
            (
                "its BEGIN line alone",
                "-----BEGIN CERTIFICATE-----\n".to_string(),
                Err(GoPemError::NoCertificates),
            ),
            (
                "its BEGIN line cut",
                "-----BEGIN CERTIF".to_string(),
                Err(GoPemError::NoCertificates),
            ),
            (
                "not PEM",
                "not a certificate\n".to_string(),
                Err(GoPemError::NoCertificates),
            ),
            (
                "a cut one, then a whole one",
                format!("{cut_in_two}\n{one}"),
                Ok(vec![a.clone()]),
            ),
            (
                "text after its END line",
                one.replace("-----END CERTIFICATE-----", "-----END CERTIFICATE----- x"),
                Err(GoPemError::NoCertificates),
            ),
            (
                "END of another type",
                one.replace("-----END CERTIFICATE-----", "-----END PUBLIC KEY-----"),
                Err(GoPemError::NoCertificates),
            ),
            (
                "a body that is not base64",
                one.replacen("MII", "M*I", 1),
                Err(GoPemError::NoCertificates),
            ),
            (
                "another block type only",
                one.replace("CERTIFICATE", "PUBLIC KEY"),
                Err(GoPemError::NoCertificates),
            ),
            (
                "a certificate with headers, then one without",
                format!(
                    "{}{two}",
                    one.replacen("-----\n", "-----\nProc-Type: 4,ENCRYPTED\n", 1)
                ),
                Ok(vec![b.clone()]),
            ),
            (
                "a whole block whose DER is cut",
                crate::pki::pem_encode("CERTIFICATE", &a[..a.len() - 10]),
                Err(GoPemError::Malformed),
            ),
            (
                "a bad certificate after a good one",
                format!("{one}{}", crate::pki::pem_encode("CERTIFICATE", b"not DER")),
                Err(GoPemError::Malformed),
            ),
        ];
        for (case, text, expected) in table {
            assert_eq!(go_ca_bundle(text.as_bytes()), expected, "{case}");
        }
    }
}
