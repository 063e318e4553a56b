//! Go's JSON as upstream's pull-secret merge reads and writes it: `github.com/clarketm/json`
//! v1.17.1 (vendored by release-4.14 and release-4.16), a copy of Go's `encoding/json`. This
//! file owns reading input `go_syntax.rs` accepted: strings as Go unquotes them, keys matched
//! to struct fields as Go folds them, values skipped (checked as `interface{}` numbers where
//! Go decodes them so); and writing strings as Go's `Marshal` escapes them. What the operator
//! decodes into which type lives in `dockerconfig.rs`.
//!
//! Where serde_json differs: it refuses invalid UTF-8 and lone `\uD800` surrogates in strings
//! (Go reads U+FFFD), refuses numbers beyond `f64` anywhere (Go only where it decodes into
//! `interface{}`), matches keys exactly, and writes `<`, `>`, `&`, U+2028 and U+2029
//! unescaped.

/// What Go's `Unmarshal` reports; the first error ends the decoding (Go keeps decoding after a
/// type error, but upstream discards everything once `Unmarshal` returns one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GoJsonError {
    /// A syntax error or too deep a nesting, in Go's words.
    #[error("{0}")]
    Syntax(String),
    #[error("cannot unmarshal {value} into Go value of type {target} at byte {offset}")]
    Type {
        value: &'static str,
        target: &'static str,
        offset: usize,
    },
}

/// The kind of the JSON value at a position, named as Go's `UnmarshalTypeError` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Object,
    Array,
    String,
    Number,
    Bool,
    Null,
}

impl Kind {
    fn of(byte: u8) -> Kind {
        match byte {
            b'{' => Kind::Object,
            b'[' => Kind::Array,
            b'"' => Kind::String,
            b't' | b'f' => Kind::Bool,
            b'n' => Kind::Null,
            _ => Kind::Number,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Object => "object",
            Kind::Array => "array",
            Kind::String => "string",
            Kind::Number => "number",
            Kind::Bool => "bool",
            Kind::Null => "null",
        }
    }
}

/// JSON's white space, the only bytes Go skips between tokens.
pub fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// A reader over input `go_syntax::check_valid` accepted, or a value read from such input: it
/// never meets a syntax error.
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, pos: 0 }
    }

    pub fn offset(&self) -> usize {
        self.pos
    }

    fn skip_space(&mut self) {
        while self.data.get(self.pos).copied().is_some_and(is_space) {
            self.pos += 1;
        }
    }

    /// The kind of the next value.
    pub fn kind(&mut self) -> Kind {
        self.skip_space();
        Kind::of(self.data[self.pos])
    }

    /// The next key of the object being read, after its `{` or its previous member's value;
    /// `None` at its `}`. Call first with the reader at the object's `{`.
    pub fn next_key(&mut self) -> Option<String> {
        self.skip_space();
        match self.data[self.pos] {
            b'}' => {
                self.pos += 1;
                return None;
            }
            b'{' | b',' => {
                self.pos += 1;
                self.skip_space();
                if self.data[self.pos] == b'}' {
                    self.pos += 1;
                    return None;
                }
            }
            _ => {}
        }
        let key = self.string();
        self.skip_space();
        self.pos += 1; // the colon
        Some(key)
    }

    /// The next value, a string, as Go unquotes it.
    pub fn string(&mut self) -> String {
        self.skip_space();
        let start = self.pos + 1;
        let mut end = start;
        while self.data[end] != b'"' {
            end += if self.data[end] == b'\\' { 2 } else { 1 };
        }
        self.pos = end + 1;
        unquote(&self.data[start..end])
    }

    /// Pass over the next value and return its bytes. With `as_interface`, every number in it
    /// must parse as a `float64`, as Go requires of a number decoded into `interface{}`
    /// (`convertNumber`: `strconv.ParseFloat` fails only beyond its range).
    pub fn skip(&mut self, as_interface: bool) -> Result<&'a [u8], GoJsonError> {
        self.skip_space();
        let start = self.pos;
        let mut depth = 0usize;
        loop {
            let byte = self.data[self.pos];
            match byte {
                b'"' => {
                    self.string();
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.pos += 1;
                }
                b'}' | b']' => {
                    depth -= 1;
                    self.pos += 1;
                }
                b'-' | b'0'..=b'9' => {
                    let from = self.pos;
                    while self
                        .data
                        .get(self.pos)
                        .is_some_and(|b| b"+-.eE0123456789".contains(b))
                    {
                        self.pos += 1;
                    }
                    let text = std::str::from_utf8(&self.data[from..self.pos]).unwrap_or("0");
                    if as_interface && text.parse::<f64>().is_ok_and(f64::is_infinite) {
                        return Err(GoJsonError::Type {
                            value: "number",
                            target: "float64",
                            offset: from,
                        });
                    }
                }
                b't' | b'n' => self.pos += 4,
                b'f' => self.pos += 5,
                _ => self.pos += 1, // white space, `,` and `:` between members
            }
            if depth == 0 {
                return Ok(&self.data[start..self.pos]);
            }
        }
    }
}

/// Go's `unquoteBytes` on a string's bytes between its quotes: escapes decoded, a `\u` escape
/// of a lone surrogate read as U+FFFD, and each byte that does not start a valid UTF-8
/// sequence read as one U+FFFD (`utf8.DecodeRune` steps one byte on an error).
pub fn unquote(raw: &[u8]) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] != b'\\' {
            let run = raw[i..]
                .iter()
                .position(|&b| b == b'\\')
                .map_or(raw.len(), |n| i + n);
            push_lossy_per_byte(&mut out, &raw[i..run]);
            i = run;
            continue;
        }
        let escape = raw[i + 1];
        i += 2;
        match escape {
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'n' => out.push('\n'),
            b'r' => out.push('\r'),
            b't' => out.push('\t'),
            b'u' => {
                let first = hex4(&raw[i..]).unwrap_or(0);
                i += 4;
                if !(0xD800..0xE000).contains(&first) {
                    out.push(char::from_u32(first).unwrap_or(char::REPLACEMENT_CHARACTER));
                    continue;
                }
                let second = raw
                    .get(i..i + 2)
                    .filter(|s| *s == b"\\u")
                    .and_then(|_| hex4(&raw[i + 2..]));
                match second {
                    Some(low @ 0xDC00..0xE000) if (0xD800..0xDC00).contains(&first) => {
                        let code = 0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00);
                        out.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
                        i += 6;
                    }
                    _ => out.push(char::REPLACEMENT_CHARACTER),
                }
            }
            other => out.push(char::from(other)), // `"`, `\` and `/`
        }
    }
    out
}

fn hex4(raw: &[u8]) -> Option<u32> {
    let digits = std::str::from_utf8(raw.get(..4)?).ok()?;
    u32::from_str_radix(digits, 16).ok()
}

fn push_lossy_per_byte(out: &mut String, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        match std::str::from_utf8(bytes) {
            Ok(text) => {
                out.push_str(text);
                return;
            }
            Err(e) => {
                let valid = e.valid_up_to();
                out.push_str(std::str::from_utf8(&bytes[..valid]).unwrap_or_default());
                out.push(char::REPLACEMENT_CHARACTER);
                bytes = &bytes[valid + 1..];
            }
        }
    }
}

/// Whether a JSON key names a struct field whose tag is `name` (ASCII): Go takes an exact
/// match first, else one equal under Unicode simple case folding, where of all non-ASCII
/// characters only U+017F `ſ` folds to an ASCII letter (`s`) and U+212A Kelvin to `k`.
pub fn folds_to(key: &str, name: &str) -> bool {
    let mut name = name.bytes();
    for c in key.chars() {
        let Some(n) = name.next() else { return false };
        let equal = match c {
            '\u{17F}' => n.eq_ignore_ascii_case(&b's'),
            '\u{212A}' => n.eq_ignore_ascii_case(&b'k'),
            c => c.is_ascii() && (c as u8).eq_ignore_ascii_case(&n),
        };
        if !equal {
            return false;
        }
    }
    name.next().is_none()
}

/// Go's `encodeState.string` with HTML escaping on (what `json.Marshal` uses): `"` and `\`
/// backslashed; `\n`, `\r`, `\t` short; other controls and `<`, `>`, `&` as `\u00XX` (so
/// `\b` is `\u0008`: Go's own short `\b` and `\f` came with Go 1.22, after clarketm's copy);
/// U+2028 and U+2029 as `\u2028`, `\u2029`. A `&str` holds no invalid UTF-8, which Go would
/// write as `\ufffd`.
pub fn write_string(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for c in text.chars() {
        match c {
            '"' | '\\' => out.extend_from_slice(&[b'\\', c as u8]),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\0'..'\u{20}' | '<' | '>' | '&' => {
                let b = c as u8;
                out.extend_from_slice(b"\\u00");
                out.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xF)]]);
            }
            '\u{2028}' => out.extend_from_slice(b"\\u2028"),
            '\u{2029}' => out.extend_from_slice(b"\\u2029"),
            c => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquote_reads_bad_utf8_and_lone_surrogates_as_go_does() {
        let table: &[(&[u8], &str)] = &[
            (b"plain", "plain"),
            (b"a\xffb", "a\u{FFFD}b"),
            // One U+FFFD a byte, where `String::from_utf8_lossy` gives one for both.
            (b"\xe2\x82z", "\u{FFFD}\u{FFFD}z"),
            (br"\ud800\u0041", "\u{FFFD}A"),
            (br"\udc00\ud83d\ude00", "\u{FFFD}\u{1F600}"),
            (br"\b\f\/\u00e9", "\u{8}\u{c}/\u{e9}"),
        ];
        for (raw, text) in table {
            assert_eq!(unquote(raw), *text, "{}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn keys_fold_to_field_names_as_go_does() {
        let table = [
            ("username", "username", true),
            ("USERNAME", "username", true),
            ("uſername", "username", true),
            ("\u{212A}ey", "key", true),
            ("user_name", "username", false),
            ("usernames", "username", false),
            ("emaıl", "email", false),
        ];
        for (key, name, folds) in table {
            assert_eq!(folds_to(key, name), folds, "{key} ~ {name}");
        }
    }

    #[test]
    fn strings_are_written_as_go_marshal_escapes_them() {
        let mut out = Vec::new();
        write_string(&mut out, "<a>&\"\\/\u{8}\n\u{1f}\u{7f}\u{2028}é");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#""\u003ca\u003e\u0026\"\\/\u0008\n\u001f"#.to_owned() + "\u{7f}\\u2028é\""
        );
    }
}
