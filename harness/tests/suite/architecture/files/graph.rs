//! A crate's files and the uses between them, as the module doc of `files` defines them: the
//! files read from `lib.rs` down, each file's imports, a written path resolved to the file whose
//! item it names, and the graph of uses. What may stay in a circle is `files`' to say.

use super::tokens::{Tok, ident, tokens, use_tree, without_tests};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One name a `use` brings into a file.
#[derive(Debug)]
struct Import {
    /// The name in the file (`as` applied); empty for a glob.
    local: String,
    /// Where it comes from, as a module path in the crate; `None` outside the crate.
    target: Option<Vec<String>>,
    /// As written.
    written: String,
    glob: bool,
    /// `pub` or `pub(…)`: a re-export.
    public: bool,
}

/// One file of the crate, read.
struct File {
    path: PathBuf,
    /// Its code, test code left out.
    code: Vec<Tok>,
    /// The modules it declares (`mod x;`).
    children: BTreeSet<String>,
    imports: Vec<Import>,
    /// The token ranges of its `use` declarations.
    use_spans: Vec<(usize, usize)>,
    /// The names of the items it defines.
    defines: BTreeSet<String>,
}

pub(super) struct CrateFiles {
    /// The crate's directory, relative to the workspace, for messages.
    pub(super) dir: String,
    name: Option<String>,
    files: BTreeMap<Vec<String>, File>,
}

fn module_name(module: &[String]) -> String {
    if module.is_empty() {
        "crate".into()
    } else {
        module.join("::")
    }
}

/// One file read: its code without test code, and the modules it declares as test code.
fn parse(path: PathBuf, text: &str) -> (File, Vec<String>) {
    let (code, test_files) = without_tests(&tokens(text));
    let mut children = BTreeSet::new();
    let mut defines = BTreeSet::new();
    let mut depth = 0;
    for (i, tok) in code.iter().enumerate() {
        match tok {
            Tok::Open('{') => depth += 1,
            Tok::Close('}') => depth -= 1,
            Tok::Ident(w)
                if matches!(
                    w.as_str(),
                    "fn" | "struct" | "enum" | "union" | "trait" | "type" | "const" | "static" | "mod"
                ) =>
            {
                let Some(name) = ident(code.get(i + 1)) else {
                    continue;
                };
                defines.insert(name.to_string());
                match (w.as_str(), code.get(i + 2)) {
                    ("mod", Some(Tok::Punct(';'))) if depth == 0 => {
                        children.insert(name.to_string());
                    }
                    ("mod", Some(Tok::Open('{'))) => panic!(
                        "{}: inline module {name}: the file check reads `self` and `super` as the \
                         file's; teach it inline modules first",
                        path.display()
                    ),
                    _ => {}
                }
            }
            Tok::Ident(w) if w == "macro_rules" => {
                if let Some(name) = ident(code.get(i + 2)) {
                    defines.insert(name.to_string());
                }
            }
            _ => {}
        }
    }
    let file = File {
        path,
        code,
        children,
        imports: Vec::new(),
        use_spans: Vec::new(),
        defines,
    };
    (file, test_files)
}

impl CrateFiles {
    /// Every file of the library under `crate_dir/src`, from `lib.rs` down.
    pub(super) fn read(crate_dir: &str) -> CrateFiles {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let src = workspace.join(crate_dir).join("src");
        let mut files = BTreeMap::new();
        let mut test_dirs: Vec<PathBuf> = Vec::new();
        let mut queue = vec![(src.join("lib.rs"), Vec::<String>::new())];
        while let Some((path, module)) = queue.pop() {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let (file, test_files) = parse(path.strip_prefix(workspace).unwrap().to_path_buf(), &text);
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            let dir = if matches!(stem.as_str(), "lib" | "mod") {
                path.parent().unwrap().to_path_buf()
            } else {
                path.parent().unwrap().join(&stem)
            };
            let child_file = |name: &str| {
                let flat = dir.join(format!("{name}.rs"));
                let nested = dir.join(name).join("mod.rs");
                match (flat.exists(), nested.exists()) {
                    (true, false) => flat,
                    (false, true) => nested,
                    _ => panic!("{}: mod {name}: no single file for it", path.display()),
                }
            };
            for name in &test_files {
                test_dirs.push(child_file(name));
                test_dirs.push(dir.join(name));
            }
            for name in &file.children {
                let mut child = module.clone();
                child.push(name.clone());
                queue.push((child_file(name), child));
            }
            files.insert(module, file);
        }
        let crate_files = CrateFiles::from_files(crate_dir, files);
        // Every library file is read or is test code.
        let mut stack = vec![src.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path == src.join("bin") || test_dirs.iter().any(|t| path.starts_with(t)) {
                    continue;
                }
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let relative = path.strip_prefix(workspace).unwrap();
                    assert!(
                        crate_files.files.values().any(|f| f.path == relative),
                        "{}: neither read from lib.rs nor test code",
                        relative.display()
                    );
                }
            }
        }
        crate_files
    }

    /// A crate of `sources`, each a module path (`""` for the root, `"a::b"`) and its text.
    pub(super) fn from_sources(sources: &[(&str, &str)]) -> CrateFiles {
        let files = sources
            .iter()
            .map(|(module, text)| {
                let module: Vec<String> = module
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                let (file, _) = parse(PathBuf::from(format!("<{}>", module_name(&module))), text);
                (module, file)
            })
            .collect();
        CrateFiles::from_files("sources", files)
    }

    /// The crate of `files`, its name and every file's imports read.
    fn from_files(crate_dir: &str, files: BTreeMap<Vec<String>, File>) -> CrateFiles {
        let extern_self = [
            Tok::Ident("extern".into()),
            Tok::Ident("crate".into()),
            Tok::Ident("self".into()),
            Tok::Ident("as".into()),
        ];
        let name = files.get(&Vec::new()).and_then(|root| {
            let at = root.code.windows(4).position(|w| w == extern_self)?;
            ident(root.code.get(at + 4)).map(str::to_string)
        });
        let mut crate_files = CrateFiles {
            dir: crate_dir.into(),
            name,
            files,
        };
        let modules: Vec<Vec<String>> = crate_files.files.keys().cloned().collect();
        for module in modules {
            let file = &crate_files.files[&module];
            let mut imports = Vec::new();
            let mut use_spans = Vec::new();
            for (i, tok) in file.code.iter().enumerate() {
                if tok != &Tok::Ident("use".into()) {
                    continue;
                }
                let public = match i.checked_sub(1).map(|p| &file.code[p]) {
                    Some(Tok::Ident(w)) => w == "pub",
                    Some(Tok::Close(')')) => file.code[..i]
                        .iter()
                        .rposition(|t| t == &Tok::Open('('))
                        .is_some_and(|open| ident(file.code.get(open.wrapping_sub(1))) == Some("pub")),
                    _ => false,
                };
                let mut names = Vec::new();
                let end = use_tree(&file.code, i + 1, Vec::new(), &mut names);
                use_spans.push((i, end));
                for (local, written, glob) in names {
                    imports.push(Import {
                        local,
                        target: crate_files.absolute(&module, &written),
                        written: written.join("::") + if glob { "::*" } else { "" },
                        glob,
                        public,
                    });
                }
            }
            let file = crate_files.files.get_mut(&module).unwrap();
            file.imports = imports;
            file.use_spans = use_spans;
        }
        crate_files
    }

    /// `written`, a path as `module`'s file writes it, as a path from the crate root; `None` when
    /// it leads outside the crate.
    fn absolute(&self, module: &[String], written: &[String]) -> Option<Vec<String>> {
        let (first, rest) = written.split_first()?;
        let mut base = module.to_vec();
        match first.as_str() {
            "crate" => base.clear(),
            "self" => {}
            "super" => {
                base.pop();
            }
            name if self.name.as_deref() == Some(name) => base.clear(),
            name if self.files[module].children.contains(name) => base.push(name.into()),
            _ => return None,
        }
        let mut rest = rest;
        while let Some((first, more)) = rest.split_first()
            && first == "super"
        {
            base.pop();
            rest = more;
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file whose item `path` names: the deepest file along it, or, when the name after
    /// that is one the file imports, where the import comes from.
    fn locate(&self, path: &[String], hops: usize) -> Vec<String> {
        let n = (0..=path.len())
            .rev()
            .find(|&n| self.files.contains_key(&path[..n]))
            .unwrap();
        let module = path[..n].to_vec();
        let file = &self.files[&module];
        let Some(name) = path.get(n) else {
            return module;
        };
        if hops > 8 || file.defines.contains(name) {
            return module;
        }
        let follow = |target: &Vec<String>, rest: &[String]| {
            let mut next = target.clone();
            next.extend(rest.iter().cloned());
            self.locate(&next, hops + 1)
        };
        if let Some(target) = file
            .imports
            .iter()
            .find(|i| !i.glob && &i.local == name)
            .and_then(|i| i.target.as_ref())
        {
            return follow(target, &path[n + 1..]);
        }
        for glob in file.imports.iter().filter(|i| i.glob) {
            let Some(target) = &glob.target else { continue };
            let source = self.locate(target, hops + 1);
            let has = &self.files[&source];
            if has.defines.contains(name) || has.imports.iter().any(|i| &i.local == name) {
                return follow(&source, &path[n..]);
            }
        }
        module
    }

    /// File → the files it uses, each with one path that shows it.
    pub(super) fn graph(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (module, file) in &self.files {
            let uses = graph.entry(module_name(module)).or_default();
            let mut add = |target: &[String], written: String| {
                let to = self.locate(target, 0);
                if to != *module {
                    uses.entry(module_name(&to)).or_insert(written);
                }
            };
            let in_use = |i: usize| file.use_spans.iter().any(|&(a, b)| (a..b).contains(&i));
            for import in &file.imports {
                let Some(target) = &import.target else { continue };
                // By words: a type or constant wherever it stands, a function or module where
                // it is called or a path goes on (a local of the same name is none of these).
                let lower = import.local.starts_with(|c: char| c.is_lowercase());
                let used_here = file.code.iter().enumerate().any(|(i, t)| {
                    let before = i.checked_sub(1).map(|p| &file.code[p]);
                    let after = file.code.get(i + 1);
                    !in_use(i)
                        && ident(Some(t)) == Some(import.local.as_str())
                        && !matches!(before, Some(Tok::Sep | Tok::Punct('.')))
                        && ident(before) != Some("mod")
                        && (!lower || matches!(after, Some(Tok::Open('(') | Tok::Punct('!') | Tok::Sep)))
                });
                if !import.public || (!import.glob && used_here) {
                    add(target, format!("use {}", import.written));
                }
            }
            for (i, tok) in file.code.iter().enumerate() {
                let Tok::Ident(first) = tok else { continue };
                if in_use(i)
                    || i.checked_sub(1).is_some_and(|p| file.code[p] == Tok::Sep)
                    || file.code.get(i + 1) != Some(&Tok::Sep)
                {
                    continue;
                }
                let mut written = vec![first.clone()];
                let mut j = i + 1;
                while file.code.get(j) == Some(&Tok::Sep)
                    && let Some(next) = ident(file.code.get(j + 1))
                {
                    written.push(next.to_string());
                    j += 2;
                }
                if let Some(target) = self.absolute(module, &written) {
                    add(&target, written.join("::"));
                }
            }
        }
        graph
    }

    /// The file of `name`, a module as the graph names it, for messages.
    pub(super) fn path_of(&self, name: &str) -> String {
        let module: Vec<String> = if name == "crate" {
            Vec::new()
        } else {
            name.split("::").map(str::to_string).collect()
        };
        self.files[&module].path.display().to_string()
    }
}
