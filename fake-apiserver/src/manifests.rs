//! Loading manifests from YAML files: multi-document, `kind: List` expanded, directories read
//! in name order. Every error names the file and the document (1-based) and, where the YAML
//! parser knows it, the line.

use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One object and where it came from.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub file: PathBuf,
    /// 1-based position of the YAML document in its file.
    pub document: usize,
    pub object: Value,
}

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("{file}: {source}")]
    Read { file: PathBuf, source: std::io::Error },
    #[error("{file}: document {document}{}: {message}", line.map(|l| format!(" (line {l})")).unwrap_or_default())]
    Parse {
        file: PathBuf,
        document: usize,
        line: Option<usize>,
        message: String,
    },
}

/// Read every manifest in `paths` (files, or directories of `*.yaml` / `*.yml`).
pub fn load(paths: &[PathBuf]) -> Result<Vec<Manifest>, ManifestError> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|source| ManifestError::Read {
                    file: path.clone(),
                    source,
                })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
                .collect();
            files.sort();
            for file in files {
                out.extend(load_file(&file)?);
            }
        } else {
            out.extend(load_file(path)?);
        }
    }
    Ok(out)
}

pub fn load_file(file: &Path) -> Result<Vec<Manifest>, ManifestError> {
    let text = std::fs::read_to_string(file).map_err(|source| ManifestError::Read {
        file: file.into(),
        source,
    })?;
    parse(file, &text)
}

/// Parse the documents of one file's text.
pub fn parse(file: &Path, text: &str) -> Result<Vec<Manifest>, ManifestError> {
    let mut out = Vec::new();
    for (i, doc) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let document = i + 1;
        let bad = |line: Option<usize>, message: String| ManifestError::Parse {
            file: file.into(),
            document,
            line,
            message,
        };
        let value =
            Value::deserialize(doc).map_err(|e| bad(e.location().map(|l| l.line()), e.to_string()))?;
        if value.is_null() {
            continue;
        }
        let items = if value["kind"] == "List" {
            value["items"].as_array().cloned().unwrap_or_default()
        } else {
            vec![value]
        };
        for object in items {
            if !object.is_object() {
                return Err(bad(None, "not a Kubernetes object (expected a mapping)".into()));
            }
            for field in ["apiVersion", "kind"] {
                if !object[field].is_string() {
                    return Err(bad(None, format!("missing {field}")));
                }
            }
            out.push(Manifest {
                file: file.into(),
                document,
                object,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_numbered_and_errors_name_them() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n";
        let m = parse(Path::new("x.yaml"), text).unwrap();
        assert_eq!(m.iter().map(|m| m.document).collect::<Vec<_>>(), [1, 3]);
        let e = parse(
            Path::new("x.yaml"),
            "kind: ConfigMap\n---\napiVersion: v1\nkind: [\n",
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "x.yaml: document 1: missing apiVersion");
        let e = parse(
            Path::new("x.yaml"),
            "apiVersion: v1\nkind: A\n---\napiVersion: v1\nkind: [\n",
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("x.yaml: document 2 (line"), "{e}");
    }
}
