//! `workspace/symbol`: the kernels and jit helpers of every file in the
//! workspace whose name matches the query (its letters in order, any case).
//! Open documents answer from their current text; the `*.py` files under
//! the workspace folders are scanned on the blocking pool the first time
//! one is asked for, and again at most every few seconds, each file read
//! again only when its modification time changed. The scan is bounded (files,
//! bytes, depth; hidden, virtual-environment and build folders skipped), and
//! a request waits for it at most a second: a later one sees the rest.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::lsp::convert;
use crate::lsp::navigation::{self, Source};
use crate::model::FileModel;
use crate::text::LineIndex;

use super::document_symbol::symbol_kind;
use super::*;

/// The kernels found in the workspace's files, shared with the scan.
pub(super) type Kernels = Arc<Mutex<Index>>;

#[derive(Default)]
pub(super) struct Index {
    files: HashMap<PathBuf, (SystemTime, Vec<Found>)>,
    scanned: Option<Instant>,
    scanning: bool,
}

/// One kernel of a file: its name, detail and range, in the negotiated encoding.
#[derive(Clone)]
struct Found {
    name: String,
    detail: String,
    kind: SymbolKind,
    range: Range,
}

const MAX_FILES: usize = 5_000;
const MAX_FILE_BYTES: u64 = 2 << 20;
const MAX_DEPTH: usize = 12;
const MAX_RESULTS: usize = 500;
const RESCAN_AFTER: Duration = Duration::from_secs(5);
const SKIPPED_DIRS: &[&str] = &["node_modules", "__pycache__", "target", "venv", "site-packages", "build", "dist"];

/// The kernels of one text.
fn kernels_of(text: &str, enc: Encoding) -> Vec<Found> {
    // Most Python files define no kernel: skip their parse.
    if !text.contains("jit") {
        return Vec::new();
    }
    let src = Source { text: Arc::from(text), line_index: Arc::new(LineIndex::new(text)), tree: None };
    found_in(&src, enc)
}

fn found_in(src: &Source, enc: Encoding) -> Vec<Found> {
    let tree = src.tree();
    let m = FileModel::build(&src.text, &tree);
    navigation::kernel_symbols(&m)
        .into_iter()
        .map(|s| Found {
            name: s.name,
            detail: s.detail,
            kind: symbol_kind(s.kind),
            range: convert::range(&src.text, &src.line_index, s.selection, enc),
        })
        .collect()
}

/// The `*.py` files under `folders`, bounded.
fn python_files(folders: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack: Vec<(PathBuf, usize)> = folders.iter().map(|f| (f.clone(), 0)).collect();
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                if depth < MAX_DEPTH && !name.starts_with('.') && !SKIPPED_DIRS.contains(&name.as_str()) {
                    stack.push((path, depth + 1));
                }
            } else if kind.is_file() && name.ends_with(".py") {
                out.push(path);
                if out.len() >= MAX_FILES {
                    return out;
                }
            }
        }
    }
    out
}

/// Reads again the files whose modification time changed, drops the ones gone.
fn rescan(index: &Mutex<Index>, folders: &[PathBuf], enc: Encoding) {
    let files = python_files(folders);
    let known: HashMap<PathBuf, SystemTime> =
        super::lock_any(index).files.iter().map(|(p, (t, _))| (p.clone(), *t)).collect();
    let mut fresh = HashMap::new();
    for path in files {
        let Ok(meta) = std::fs::metadata(&path) else { continue };
        let Ok(mtime) = meta.modified() else { continue };
        if known.get(&path) == Some(&mtime) {
            continue;
        }
        let found = if meta.len() > MAX_FILE_BYTES {
            Vec::new()
        } else {
            std::fs::read_to_string(&path).map(|t| kernels_of(&t, enc)).unwrap_or_default()
        };
        fresh.insert(path, (mtime, found));
    }
    let mut idx = super::lock_any(index);
    idx.files.retain(|p, _| p.exists());
    idx.files.extend(fresh);
    idx.scanned = Some(Instant::now());
    idx.scanning = false;
}

/// Whether `query`'s characters appear in `name` in order, ignoring case.
fn matches(name: &str, query: &str) -> bool {
    let mut chars = name.chars().flat_map(char::to_lowercase);
    query.chars().flat_map(char::to_lowercase).all(|q| chars.any(|c| c == q))
}

fn path_uri(path: &Path) -> Option<Uri> {
    Uri::from_file_path(path)
}

impl Server {
    pub(super) async fn on_workspace_symbol(
        &self,
        params: WorkspaceSymbolParams,
    ) -> Result<Option<WorkspaceSymbolResponse>> {
        let (open, folders, enc) = {
            let st = self.state();
            let open: Vec<(Uri, Source)> = st.docs.iter().map(|(u, d)| (u.clone(), d.syntax())).collect();
            (open, st.folders.clone(), st.encoding)
        };
        let stale = {
            let mut idx = super::lock_any(&self.workspace_kernels);
            let stale = !idx.scanning && idx.scanned.is_none_or(|t| t.elapsed() > RESCAN_AFTER);
            if stale {
                idx.scanning = true;
            }
            stale
        };
        if stale {
            let index = self.workspace_kernels.clone();
            let scan = tokio::task::spawn_blocking(move || rescan(&index, &folders, enc));
            // The first answer waits for the scan a little; the scan goes on either way.
            let _ = tokio::time::timeout(Duration::from_secs(1), scan).await;
        }
        let query = params.query;
        let open_found = super::definition::off_thread(move || {
            Some(open.into_iter().map(|(uri, src)| (uri, found_in(&src, enc))).collect::<Vec<_>>())
        })
        .await
        .unwrap_or_default();
        let mut out: Vec<(Uri, Found)> = Vec::new();
        let open_paths: Vec<PathBuf> = open_found.iter().filter_map(|(u, _)| file_path(u)).collect();
        for (uri, found) in open_found {
            out.extend(found.into_iter().map(|f| (uri.clone(), f)));
        }
        {
            let idx = super::lock_any(&self.workspace_kernels);
            let mut paths: Vec<&PathBuf> = idx.files.keys().filter(|p| !open_paths.contains(p)).collect();
            paths.sort();
            for p in paths {
                let Some(uri) = path_uri(p) else { continue };
                out.extend(idx.files[p].1.iter().map(|f| (uri.clone(), f.clone())));
            }
        }
        out.retain(|(_, f)| matches(&f.name, &query));
        out.truncate(MAX_RESULTS);
        #[allow(deprecated)]
        let symbols = out
            .into_iter()
            .map(|(uri, f)| SymbolInformation {
                name: f.name,
                kind: f.kind,
                tags: None,
                deprecated: None,
                location: Location { uri, range: f.range },
                container_name: Some(f.detail),
            })
            .collect();
        Ok(Some(WorkspaceSymbolResponse::Flat(symbols)))
    }
}
