//! The API of `triton.language`: each public name's module, parameters
//! (names, defaults, kinds) and docstring, as `server/harness/triton_api.py`
//! prints it. Two sources: the user's own Triton (read by the server at its
//! edge, cached on disk per version) and the database generated from the
//! pinned Triton, embedded here for when there is none:
//!
//! ```text
//! python server/harness/triton_api.py > server/data/triton_api.json
//! ```
//!
//! This module only parses and answers; it starts no process and reads no file.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use serde::Deserialize;

const EMBEDDED: &str = include_str!("../../data/triton_api.json");

#[derive(Debug, Clone, Deserialize)]
pub struct ApiParam {
    pub name: String,
    /// `positional_only`, `positional_or_keyword`, `var_positional`, `keyword_only`, `var_keyword`.
    pub kind: String,
    /// The default as Python source (`None`, `''`, `False`).
    #[serde(default)]
    pub default: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ApiEntry {
    /// As written after `tl.`: `load`, `math.exp`, `extra.libdevice.tanh`.
    pub name: String,
    pub module: String,
    /// `function`, `class` or `value`.
    pub kind: String,
    #[serde(default)]
    pub params: Option<Vec<ApiParam>>,
    #[serde(default)]
    pub doc: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Raw {
    version: String,
    entries: Vec<ApiEntry>,
}

/// One Triton's `triton.language` API.
#[derive(Debug)]
pub struct TritonApi {
    pub version: String,
    /// Where it was read: `the embedded database` or the interpreter.
    pub source: String,
    entries: HashMap<String, ApiEntry>,
    /// Top-level names, sorted (what completion after `tl.` offers).
    top: Vec<String>,
}

impl TritonApi {
    /// Parses what `triton_api.py` printed.
    pub fn parse(json: &str, source: &str) -> Result<TritonApi, String> {
        let raw: Raw = serde_json::from_str(json).map_err(|e| format!("not a Triton API database: {e}"))?;
        if raw.entries.is_empty() {
            return Err("the Triton API database lists no names".into());
        }
        let mut top: Vec<String> =
            raw.entries.iter().filter(|e| !e.name.contains('.')).map(|e| e.name.clone()).collect();
        top.sort();
        let entries = raw.entries.into_iter().map(|e| (e.name.clone(), e)).collect();
        Ok(TritonApi { version: raw.version, source: source.to_string(), entries, top })
    }

    /// The database generated from the pinned Triton, parsed once.
    pub fn embedded() -> Arc<TritonApi> {
        static API: OnceLock<Arc<TritonApi>> = OnceLock::new();
        API.get_or_init(|| {
            let api = TritonApi::parse(EMBEDDED, "the embedded database")
                .unwrap_or_else(|_| TritonApi::empty("the embedded database"));
            Arc::new(api)
        })
        .clone()
    }

    fn empty(source: &str) -> TritonApi {
        TritonApi { version: "unknown".into(), source: source.into(), entries: HashMap::new(), top: Vec::new() }
    }

    /// The entry for a name as written after `tl.` (`load`, `math.exp`);
    /// `libdevice.X` and `extra.cuda.libdevice.X` reach `extra.libdevice.X`.
    pub fn get(&self, name: &str) -> Option<&ApiEntry> {
        if let Some(e) = self.entries.get(name) {
            return Some(e);
        }
        let leaf = name.strip_prefix("extra.cuda.").or_else(|| name.strip_prefix("extra."))?;
        self.entries.get(&format!("extra.{leaf}"))
    }

    /// Entries under a dotted prefix (`""` for `tl.`, `math.` for `tl.math.`), sorted.
    pub fn members(&self, prefix: &str) -> Vec<&ApiEntry> {
        if prefix.is_empty() {
            return self.top.iter().filter_map(|n| self.entries.get(n)).collect();
        }
        let mut v: Vec<&ApiEntry> = self
            .entries
            .values()
            .filter(|e| e.name.strip_prefix(prefix).is_some_and(|rest| !rest.contains('.')))
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }
}

impl ApiEntry {
    /// The parameters a caller writes (Triton's internal ones are already gone).
    pub fn params(&self) -> &[ApiParam] {
        self.params.as_deref().unwrap_or_default()
    }

    /// `tl.load(pointer, mask=None, *, cache_modifier='')`: the call as a Python signature.
    pub fn signature(&self) -> String {
        let Some(params) = &self.params else { return format!("tl.{}", self.name) };
        format!("tl.{}({})", self.name, param_labels(params).join(", "))
    }

    /// The docstring's first paragraph, with Sphinx roles made Markdown.
    pub fn summary(&self) -> Option<String> {
        let doc = self.doc.as_deref()?;
        let para: Vec<&str> = doc.trim().lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
        (!para.is_empty()).then(|| markdown_roles(&para.join(" ")))
    }

    /// What the docstring says of one parameter (`:param NAME: text`).
    pub(crate) fn param_doc(&self, name: &str) -> Option<String> {
        let doc = self.doc.as_deref()?;
        let tag = format!(":param {name}:");
        let at = doc.find(&tag)? + tag.len();
        let rest = &doc[at..];
        let end = rest.find("\n:").unwrap_or(rest.len());
        Some(markdown_roles(&rest[..end].split_whitespace().collect::<Vec<_>>().join(" ")))
    }

    /// The page of Triton's documentation for a top-level name.
    pub(crate) fn docs_url(&self) -> Option<String> {
        (!self.name.contains('.'))
            .then(|| format!("https://triton-lang.org/main/python-api/generated/triton.language.{}.html", self.name))
    }
}

/// Each parameter as the signature shows it, with the `/` and `*` markers.
pub(crate) fn param_labels(params: &[ApiParam]) -> Vec<String> {
    let mut out = Vec::new();
    let mut star = params.iter().any(|p| p.kind == "var_positional");
    for (i, p) in params.iter().enumerate() {
        if p.kind == "keyword_only" && !star {
            out.push("*".to_string());
            star = true;
        }
        out.push(match (p.kind.as_str(), &p.default) {
            ("var_positional", _) => format!("*{}", p.name),
            ("var_keyword", _) => format!("**{}", p.name),
            (_, Some(d)) => format!("{}={d}", p.name),
            (_, None) => p.name.clone(),
        });
        let last_positional =
            p.kind == "positional_only" && params.get(i + 1).is_none_or(|n| n.kind != "positional_only");
        if last_positional {
            out.push("/".to_string());
        }
    }
    out
}

/// `:code:`x`` and `:py:class:`x`` as Markdown code.
fn markdown_roles(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(tick) = rest.find(":`") {
        let head = &rest[..tick + 1];
        let role_start = head.trim_end_matches(|c: char| c.is_ascii_lowercase() || c == ':').len();
        let role = &head[role_start..];
        let body = &rest[tick + 2..];
        match body.find('`') {
            Some(end) if role.starts_with(':') && role.len() > 2 => {
                out.push_str(&rest[..role_start]);
                out.push('`');
                out.push_str(body[..end].trim_start_matches('~'));
                out.push('`');
                rest = &body[end + 1..];
            }
            _ => {
                out.push_str(&rest[..tick + 2]);
                rest = &rest[tick + 2..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_database_parses_and_has_the_common_names() {
        let api = TritonApi::parse(EMBEDDED, "embedded").expect("the embedded database parses");
        for name in ["load", "store", "dot", "program_id", "arange", "math.exp", "extra.libdevice.tanh"] {
            assert!(api.get(name).is_some(), "{name} missing");
        }
        assert!(api.get("tanh").is_none(), "tl.tanh does not exist");
        assert!(!api.version.is_empty() && api.version != "unknown");
        let load = api.get("load").expect("load");
        assert!(load.params().iter().all(|p| !p.name.starts_with('_')), "{:?}", load.params());
        assert_eq!(load.signature().split('(').next(), Some("tl.load"));
        assert!(load.signature().contains("mask=None"), "{}", load.signature());
        assert!(api.members("").iter().any(|e| e.name == "dot"));
        assert!(api.members("math.").iter().all(|e| e.name.starts_with("math.")));
        assert_eq!(api.get("extra.cuda.libdevice.tanh").map(|e| e.name.as_str()), Some("extra.libdevice.tanh"));
    }

    #[test]
    fn signatures_mark_keyword_only_and_positional_only_parameters() {
        let p = |name: &str, kind: &str, default: Option<&str>| ApiParam {
            name: name.into(),
            kind: kind.into(),
            default: default.map(Into::into),
        };
        let params = vec![
            p("a", "positional_only", None),
            p("b", "positional_or_keyword", Some("None")),
            p("c", "keyword_only", Some("''")),
        ];
        assert_eq!(param_labels(&params), ["a", "/", "b=None", "*", "c=''"]);
    }

    #[test]
    fn summaries_are_the_first_paragraph_in_markdown() {
        let e = ApiEntry {
            name: "f".into(),
            module: "m".into(),
            kind: "function".into(),
            params: None,
            doc: Some(
                "Adds :code:`x` to\n:py:class:`~tensor` y.\n\n:param x: the input\n  values\n:type x: Block".into(),
            ),
        };
        assert_eq!(e.summary().as_deref(), Some("Adds `x` to `tensor` y."));
        assert_eq!(e.param_doc("x").as_deref(), Some("the input values"));
        assert_eq!(
            e.docs_url().as_deref(),
            Some("https://triton-lang.org/main/python-api/generated/triton.language.f.html")
        );
    }
}
