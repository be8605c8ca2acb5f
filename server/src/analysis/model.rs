//! The file model (stub; being written).
use crate::text::{LineIndex, TextRange};
use super::KernelSummary;

pub struct ClassInfo { pub name: String, pub name_range: TextRange }

pub struct FileModel<'a> {
    pub src: &'a str,
    pub line_index: LineIndex,
    pub classes: Vec<ClassInfo>,
    pub reference: Option<String>,
}

impl<'a> FileModel<'a> {
    pub fn build(src: &'a str, _tree: &tree_sitter::Tree) -> Self {
        FileModel { src, line_index: LineIndex::new(src), classes: Vec::new(), reference: None }
    }
    pub fn kernel_summaries(&self) -> Vec<KernelSummary> { Vec::new() }
    pub fn is_suppressed(&self, _offset: usize, _code: &str) -> bool { false }
}
