//! What Go's `encoding/json` answers for `json.Unmarshal(b, &map[string]interface{}{})`, the
//! check `ValidateSecret` makes of a docker config Secret's `.dockercfg` or `.dockerconfigjson`
//! and quotes in its 422. Only the error's text is modelled, from Go 1.26's
//! `encoding/json` (the default build, not `GOEXPERIMENT=jsonv2`):
//!
//! - `checkValid` scans the whole input first (`scanner.go`), so any syntax error wins:
//!   `invalid character <c> <context>` with the byte quoted as `quoteChar` quotes it, or
//!   `unexpected end of JSON input`. At the end of input the scanner is fed one space, so a
//!   value cut inside a literal or a number blames `' '` (`1e` is `invalid character ' ' in
//!   exponent of numeric literal`). Nesting deeper than 10,000 is `exceeded max depth`.
//! - Then the decode: a top-level array, string, number or bool cannot go into a map
//!   (`json: cannot unmarshal array into Go value of type map[string]interface {}`); `null`
//!   leaves the map alone; in an object, the first number `strconv.ParseFloat` finds out of
//!   float64's range is `json: cannot unmarshal number 1e400 into Go value of type float64`.
//!
//! `testdata/go_json_errors.jsonl` holds Go's own answers for a corpus of inputs, and `tests.rs`
//! holds this module to every one. Pure functions; nothing here knows about Secrets.

/// Go's nesting bound (`maxNestingDepth`).
const MAX_DEPTH: usize = 10_000;

/// What the scanner expects next (the `step` functions of Go's scanner).
#[derive(Clone, Copy)]
enum Step {
    BeginValue,
    BeginValueOrEmpty,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    /// After the top-level value: only spaces may follow.
    EndTop,
    InString,
    InStringEscape,
    /// Inside `\u`, with this many hex digits read.
    InUnicodeEscape(u8),
    /// After a leading `-`.
    Minus,
    /// In the integer part, after its first digit (`0` ends it).
    Integer {
        zero: bool,
    },
    Dot,
    Fraction,
    Exponent,
    ExponentSign,
    ExponentDigits,
    /// In `true`, `false` or `null`, with `rest` still to come.
    Literal {
        word: &'static str,
        rest: &'static [u8],
    },
}

/// Which container the scanner is in (Go's `parseState`).
#[derive(Clone, Copy, PartialEq)]
enum Container {
    ObjectKey,
    ObjectValue,
    Array,
}

struct Scanner {
    step: Step,
    stack: Vec<Container>,
    end_top: bool,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// Go's `quoteChar`: the byte as a rune (so 0xff is `'ÿ'`) quoted by `strconv.Quote` between
/// single quotes, with `'` and `"` special-cased.
fn quote_char(c: u8) -> String {
    let inner = match c {
        b'\'' => "\\'".to_string(),
        b'"' => "\"".to_string(),
        b'\\' => "\\\\".to_string(),
        0x07 => "\\a".to_string(),
        0x08 => "\\b".to_string(),
        0x0c => "\\f".to_string(),
        b'\n' => "\\n".to_string(),
        b'\r' => "\\r".to_string(),
        b'\t' => "\\t".to_string(),
        0x0b => "\\v".to_string(),
        0x00..=0x1f | 0x7f => format!("\\x{c:02x}"),
        // `strconv.IsPrint` over Latin-1: U+0080..U+00A0 and the soft hyphen are not printable.
        0x80..=0xa0 | 0xad => format!("\\u{c:04x}"),
        _ => char::from(c).to_string(),
    };
    format!("'{inner}'")
}

fn invalid(c: u8, context: &str) -> String {
    format!("invalid character {} {context}", quote_char(c))
}

impl Scanner {
    fn new() -> Self {
        Scanner {
            step: Step::BeginValue,
            stack: Vec::new(),
            end_top: false,
        }
    }

    fn push(&mut self, c: u8, container: Container, next: Step) -> Result<(), String> {
        self.stack.push(container);
        if self.stack.len() > MAX_DEPTH {
            return Err(invalid(c, "exceeded max depth"));
        }
        self.step = next;
        Ok(())
    }

    fn pop(&mut self) {
        self.stack.pop();
        if self.stack.is_empty() {
            self.step = Step::EndTop;
            self.end_top = true;
        } else {
            self.step = Step::EndValue;
        }
    }

    /// One byte through the state machine.
    fn feed(&mut self, c: u8) -> Result<(), String> {
        match self.step {
            Step::BeginValueOrEmpty if c == b']' => self.end_value(c),
            Step::BeginValue | Step::BeginValueOrEmpty => self.begin_value(c),
            Step::BeginStringOrEmpty if c == b'}' => {
                *self.stack.last_mut().expect("inside an object") = Container::ObjectValue;
                self.end_value(c)
            }
            Step::BeginStringOrEmpty | Step::BeginString => self.begin_key(c),
            Step::EndValue => self.end_value(c),
            Step::EndTop => Self::end_top(c),
            Step::InString => self.in_string(c),
            Step::InStringEscape => self.in_string_escape(c),
            Step::InUnicodeEscape(read) => self.in_unicode_escape(read, c),
            Step::Minus => self.after_minus(c),
            Step::Integer { zero: false } if c.is_ascii_digit() => Ok(()),
            Step::Integer { .. } => self.after_integer(c),
            Step::Dot => self.after_dot(c),
            Step::Fraction => self.in_fraction(c),
            Step::Exponent if matches!(c, b'+' | b'-') => {
                self.step = Step::ExponentSign;
                Ok(())
            }
            Step::Exponent | Step::ExponentSign => self.exponent_digit(c),
            Step::ExponentDigits if c.is_ascii_digit() => Ok(()),
            Step::ExponentDigits => self.end_value(c),
            Step::Literal { word, rest } => self.in_literal(word, rest, c),
        }
    }

    /// Where an object key may begin (`stateBeginString`): spaces, then its opening quote.
    fn begin_key(&mut self, c: u8) -> Result<(), String> {
        if is_space(c) {
            Ok(())
        } else if c == b'"' {
            self.step = Step::InString;
            Ok(())
        } else {
            Err(invalid(c, "looking for beginning of object key string"))
        }
    }

    /// Inside a string (`stateInString`): a quote ends it, a backslash begins an escape, and a
    /// control character is refused.
    fn in_string(&mut self, c: u8) -> Result<(), String> {
        match c {
            b'"' => self.step = Step::EndValue,
            b'\\' => self.step = Step::InStringEscape,
            0x00..=0x1f => return Err(invalid(c, "in string literal")),
            _ => {}
        }
        Ok(())
    }

    /// After a backslash in a string (`stateInStringEsc`): one of JSON's escapes, or `u`.
    fn in_string_escape(&mut self, c: u8) -> Result<(), String> {
        self.step = match c {
            b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => Step::InString,
            b'u' => Step::InUnicodeEscape(0),
            _ => return Err(invalid(c, "in string escape code")),
        };
        Ok(())
    }

    /// Inside `\u` with `read` hex digits read (`stateInStringEscU*`): four hex digits.
    fn in_unicode_escape(&mut self, read: u8, c: u8) -> Result<(), String> {
        if !c.is_ascii_hexdigit() {
            return Err(invalid(c, "in \\u hexadecimal character escape"));
        }
        self.step = if read == 3 {
            Step::InString
        } else {
            Step::InUnicodeEscape(read + 1)
        };
        Ok(())
    }

    /// After a leading `-` (`stateNeg`): the integer part's first digit.
    fn after_minus(&mut self, c: u8) -> Result<(), String> {
        self.step = match c {
            b'0' => Step::Integer { zero: true },
            b'1'..=b'9' => Step::Integer { zero: false },
            _ => return Err(invalid(c, "in numeric literal")),
        };
        Ok(())
    }

    /// After the integer part (`state0`, and `state1` past its digits): a fraction, an
    /// exponent, or the end of the number.
    fn after_integer(&mut self, c: u8) -> Result<(), String> {
        match c {
            b'.' => {
                self.step = Step::Dot;
                Ok(())
            }
            b'e' | b'E' => {
                self.step = Step::Exponent;
                Ok(())
            }
            _ => self.end_value(c),
        }
    }

    /// After the decimal point (`stateDot`): a digit.
    fn after_dot(&mut self, c: u8) -> Result<(), String> {
        if !c.is_ascii_digit() {
            return Err(invalid(c, "after decimal point in numeric literal"));
        }
        self.step = Step::Fraction;
        Ok(())
    }

    /// In the fraction (`stateDot0`): more digits, an exponent, or the end of the number.
    fn in_fraction(&mut self, c: u8) -> Result<(), String> {
        match c {
            b'0'..=b'9' => Ok(()),
            b'e' | b'E' => {
                self.step = Step::Exponent;
                Ok(())
            }
            _ => self.end_value(c),
        }
    }

    /// After `e` and its sign, if any (`stateE`, `stateESign`): the exponent's first digit.
    fn exponent_digit(&mut self, c: u8) -> Result<(), String> {
        if !c.is_ascii_digit() {
            return Err(invalid(c, "in exponent of numeric literal"));
        }
        self.step = Step::ExponentDigits;
        Ok(())
    }

    /// Inside `true`, `false` or `null` (`stateT`, `stateTr`, …): the next letter of `word`,
    /// `rest` being those still to come.
    fn in_literal(&mut self, word: &'static str, rest: &'static [u8], c: u8) -> Result<(), String> {
        let want = rest[0];
        if c != want {
            return Err(invalid(
                c,
                &format!("in literal {word} (expecting {})", quote_char(want)),
            ));
        }
        self.step = match &rest[1..] {
            [] => Step::EndValue,
            more => Step::Literal { word, rest: more },
        };
        Ok(())
    }

    fn begin_value(&mut self, c: u8) -> Result<(), String> {
        let literal = |word: &'static str| Step::Literal {
            word,
            rest: &word.as_bytes()[1..],
        };
        self.step = match c {
            c if is_space(c) => return Ok(()),
            b'{' => return self.push(c, Container::ObjectKey, Step::BeginStringOrEmpty),
            b'[' => return self.push(c, Container::Array, Step::BeginValueOrEmpty),
            b'"' => Step::InString,
            b'-' => Step::Minus,
            b'0' => Step::Integer { zero: true },
            b'1'..=b'9' => Step::Integer { zero: false },
            b't' => literal("true"),
            b'f' => literal("false"),
            b'n' => literal("null"),
            _ => return Err(invalid(c, "looking for beginning of value")),
        };
        Ok(())
    }

    fn end_value(&mut self, c: u8) -> Result<(), String> {
        let Some(&top) = self.stack.last() else {
            self.step = Step::EndTop;
            self.end_top = true;
            return Self::end_top(c);
        };
        if is_space(c) {
            self.step = Step::EndValue;
            return Ok(());
        }
        match (top, c) {
            (Container::ObjectKey, b':') => {
                *self.stack.last_mut().expect("checked") = Container::ObjectValue;
                self.step = Step::BeginValue;
            }
            (Container::ObjectKey, _) => return Err(invalid(c, "after object key")),
            (Container::ObjectValue, b',') => {
                *self.stack.last_mut().expect("checked") = Container::ObjectKey;
                self.step = Step::BeginString;
            }
            (Container::ObjectValue, b'}') | (Container::Array, b']') => self.pop(),
            (Container::ObjectValue, _) => return Err(invalid(c, "after object key:value pair")),
            (Container::Array, b',') => self.step = Step::BeginValue,
            (Container::Array, _) => return Err(invalid(c, "after array element")),
        }
        Ok(())
    }

    fn end_top(c: u8) -> Result<(), String> {
        if is_space(c) {
            Ok(())
        } else {
            Err(invalid(c, "after top-level value"))
        }
    }
}

/// `checkValid`: the first syntax error, if any (Go's text). The harness's model of upstream's
/// pull-secret merge (clarketm/json, a copy of this scanner) checks its input with it too.
pub fn syntax_error(input: &[u8]) -> Option<String> {
    let mut scanner = Scanner::new();
    for &c in input {
        if let Err(e) = scanner.feed(c) {
            return Some(e);
        }
    }
    if scanner.end_top {
        return None;
    }
    // Go's `eof`: one space more settles a number or a top-level value, or blames the space.
    if let Err(e) = scanner.feed(b' ') {
        return Some(e);
    }
    (!scanner.end_top).then(|| "unexpected end of JSON input".to_string())
}

/// The first number in a valid document that `strconv.ParseFloat` refuses (out of float64's
/// range), as written. Numbers sit outside strings, so a walk that skips strings finds them.
fn first_overflowing_number(input: &[u8]) -> Option<&str> {
    let mut i = 0;
    while i < input.len() {
        match input[i] {
            b'"' => {
                i += 1;
                while input[i] != b'"' {
                    i += if input[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < input.len() && matches!(input[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    i += 1;
                }
                let text = std::str::from_utf8(&input[start..i]).expect("ASCII");
                // Rust rounds as Go does; Go refuses what rounds to an infinity.
                if text.parse::<f64>().is_ok_and(f64::is_infinite) {
                    return Some(text);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// The error `json.Unmarshal(input, &map[string]interface{}{})` returns, in Go's words, or
/// `None` when it returns nil.
pub(super) fn unmarshal_map_error(input: &[u8]) -> Option<String> {
    if let Some(e) = syntax_error(input) {
        return Some(e);
    }
    let first = input.iter().copied().find(|c| !is_space(*c))?;
    let kind = match first {
        b'{' => {
            return first_overflowing_number(input)
                .map(|n| format!("json: cannot unmarshal number {n} into Go value of type float64"));
        }
        b'n' => return None,
        b'[' => "array",
        b'"' => "string",
        b't' | b'f' => "bool",
        _ => "number",
    };
    Some(format!(
        "json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
    ))
}

#[cfg(test)]
mod tests;
