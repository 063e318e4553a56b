//! Rust source as the file check reads it: tokens without comments, string and character
//! literals, lifetimes and numbers; test code taken out item by item; a `use` tree unfolded
//! into the names it brings. No names or paths are resolved here (that is `graph`'s).

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Open(char),
    Close(char),
    Punct(char),
}

pub(super) fn ident(tok: Option<&Tok>) -> Option<&str> {
    match tok {
        Some(Tok::Ident(s)) => Some(s),
        _ => None,
    }
}

/// The tokens of Rust source, without comments, string and character literals, lifetimes and
/// numbers.
pub(super) fn tokens(text: &str) -> Vec<Tok> {
    fn skip_string(c: &[char], mut i: usize) -> usize {
        while i < c.len() {
            match c[i] {
                '\\' => i += 2,
                '"' => return i + 1,
                _ => i += 1,
            }
        }
        i
    }
    let c: Vec<char> = text.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if ch == '"' {
            i = skip_string(&c, i + 1);
        } else if ch == '\'' {
            if at(i + 1) == '\\' {
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                // A lifetime or a loop label.
                i += 1;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let hashes = c[i..].iter().take_while(|&&h| h == '#').count();
            if matches!(word.as_str(), "r" | "br" | "cr") && at(i + hashes) == '"' {
                let close: String = std::iter::once('"').chain("#".repeat(hashes).chars()).collect();
                let close: Vec<char> = close.chars().collect();
                i += hashes + 1;
                while i < c.len() && !c[i..].starts_with(&close) {
                    i += 1;
                }
                i += close.len();
            } else if matches!(word.as_str(), "b" | "c") && at(i) == '"' {
                i = skip_string(&c, i + 1);
            } else if word == "r" && hashes == 1 {
                i += 1; // a raw identifier: the word after it is read next
            } else {
                out.push(Tok::Ident(word));
            }
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
        } else if ch == ':' && at(i + 1) == ':' {
            out.push(Tok::Sep);
            i += 2;
        } else {
            out.push(match ch {
                '{' | '(' | '[' => Tok::Open(ch),
                '}' | ')' | ']' => Tok::Close(ch),
                _ => Tok::Punct(ch),
            });
            i += 1;
        }
    }
    out
}

/// The index just past the bracket that closes the one opened at `open`.
fn past_close(toks: &[Tok], open: usize) -> usize {
    let mut depth = 0;
    for (i, tok) in toks.iter().enumerate().skip(open) {
        match tok {
            Tok::Open(_) => depth += 1,
            Tok::Close(_) => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    toks.len()
}

/// The index just past the item that starts at `i` (its attributes first).
fn past_item(toks: &[Tok], mut i: usize) -> usize {
    while toks.get(i) == Some(&Tok::Punct('#')) && toks.get(i + 1) == Some(&Tok::Open('[')) {
        i = past_close(toks, i + 1);
    }
    let ends_at_semicolon = toks[i..]
        .iter()
        .filter_map(|t| ident(Some(t)))
        .find(|w| !matches!(*w, "pub" | "crate" | "super" | "in"))
        .is_some_and(|w| matches!(w, "const" | "static" | "use" | "type" | "let"));
    while i < toks.len() {
        match &toks[i] {
            Tok::Punct(';') => return i + 1,
            Tok::Open('{') if !ends_at_semicolon => return past_close(toks, i),
            Tok::Open(_) => i = past_close(toks, i),
            _ => i += 1,
        }
    }
    i
}

/// `toks` without test code, and the names of the file modules it declares as test code.
pub(super) fn without_tests(toks: &[Tok]) -> (Vec<Tok>, Vec<String>) {
    let cfg_test = [
        Tok::Punct('#'),
        Tok::Open('['),
        Tok::Ident("cfg".into()),
        Tok::Open('('),
        Tok::Ident("test".into()),
        Tok::Close(')'),
        Tok::Close(']'),
    ];
    let mut code = Vec::new();
    let mut test_files = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let item = if toks[i..].starts_with(&cfg_test) {
            i + cfg_test.len()
        } else if ident(toks.get(i)) == Some("mod")
            && ident(toks.get(i + 1)) == Some("tests")
            && matches!(toks.get(i + 2), Some(Tok::Open('{') | Tok::Punct(';')))
        {
            i
        } else {
            code.push(toks[i].clone());
            i += 1;
            continue;
        };
        let end = past_item(toks, item);
        let words: Vec<&str> = toks[item..end].iter().filter_map(|t| ident(Some(t))).collect();
        if let [.., "mod", name] = words[..]
            && toks[end - 1] == Tok::Punct(';')
        {
            test_files.push(name.to_string());
        }
        i = end;
    }
    (code, test_files)
}

/// The `use` tree starting at `i`, under `prefix`: its imports (name, path, glob) and the index
/// past it.
pub(super) fn use_tree(
    toks: &[Tok],
    mut i: usize,
    mut path: Vec<String>,
    out: &mut Vec<(String, Vec<String>, bool)>,
) -> usize {
    if toks[i] == Tok::Sep {
        path.push("::".into()); // `::name`: another crate
        i += 1;
    }
    loop {
        match &toks[i] {
            Tok::Ident(s) => path.push(s.clone()),
            Tok::Open('{') => {
                i += 1;
                while toks[i] != Tok::Close('}') {
                    i = use_tree(toks, i, path.clone(), out);
                    if toks[i] == Tok::Punct(',') {
                        i += 1;
                    }
                }
                return i + 1;
            }
            Tok::Punct('*') => {
                out.push((String::new(), path, true));
                return i + 1;
            }
            other => panic!("unexpected {other:?} in a use tree after {path:?}"),
        }
        i += 1;
        if toks[i] == Tok::Sep {
            i += 1;
            continue;
        }
        if path.last().is_some_and(|s| s == "self") && path.len() > 1 {
            path.pop(); // `a::{self, …}`
        }
        let mut local = path.last().unwrap().clone();
        if ident(toks.get(i)) == Some("as") {
            local = ident(toks.get(i + 1)).unwrap_or("_").to_string();
            i += 2;
        }
        out.push((local, path, false));
        return i;
    }
}
