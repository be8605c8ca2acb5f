//! Call hierarchy (reads the document's syntax): `prepareCallHierarchy` on a
//! kernel, jit helper or host function; `incomingCalls` are a kernel's launch
//! sites (grouped by the host function that launches it) and the kernels that
//! call a helper, or a host function's callers; `outgoingCalls` are the
//! helpers a kernel calls, or the kernels a host function launches and the
//! functions it calls. An item names its definition again by name and the
//! byte its name starts at (`data`), looked up in the document's current text.

use serde_json::json;

use crate::lsp::convert;
use crate::lsp::navigation::{self, Call, CallEnd, Source, Target};
use crate::model::FileModel;

use super::definition::{nav_offset, off_thread};
use super::document_symbol::symbol_kind;
use super::*;

fn item(uri: &Uri, src: &Source, end: CallEnd, enc: Encoding) -> CallHierarchyItem {
    let detail = match end.kind {
        navigation::SymbolKind::Kernel => "@triton.jit kernel",
        navigation::SymbolKind::Helper => "@triton.jit helper",
        _ => "function",
    };
    CallHierarchyItem {
        name: end.name.clone(),
        kind: symbol_kind(end.kind),
        tags: None,
        detail: Some(detail.to_string()),
        uri: uri.clone(),
        range: convert::range(&src.text, &src.line_index, end.range, enc),
        selection_range: convert::range(&src.text, &src.line_index, end.selection, enc),
        data: Some(json!({"name": end.name, "start": end.selection.start})),
    }
}

/// The calls of an item, by `which` (incoming or outgoing), with LSP ranges.
async fn calls_of(
    server: &Server,
    it: &CallHierarchyItem,
    which: fn(&FileModel, &Target) -> Vec<Call>,
) -> Option<Vec<(CallHierarchyItem, Vec<Range>)>> {
    let (src, enc) = server.nav_source(&it.uri)?;
    let uri = it.uri.clone();
    let name = it.name.clone();
    let start = it.data.as_ref().and_then(|d| d["start"].as_u64()).map(|s| s as usize);
    off_thread(move || {
        let tree = src.tree();
        let m = FileModel::build(&src.text, &tree);
        let target = navigation::item_target(&m, &name, start.unwrap_or(usize::MAX))?;
        let calls = which(&m, &target);
        let out = calls
            .into_iter()
            .map(|c| {
                let ranges = c.at.iter().map(|r| convert::range(&src.text, &src.line_index, *r, enc)).collect();
                (item(&uri, &src, c.end, enc), ranges)
            })
            .collect();
        Some(out)
    })
    .await
}

impl Server {
    pub(super) async fn on_prepare_call_hierarchy(
        &self,
        params: CallHierarchyPrepareParams,
    ) -> Result<Option<Vec<CallHierarchyItem>>> {
        let p = params.text_document_position_params;
        let Some((src, enc)) = self.nav_source(&p.text_document.uri) else { return Ok(None) };
        let uri = p.text_document.uri;
        Ok(off_thread(move || {
            let tree = src.tree();
            let m = FileModel::build(&src.text, &tree);
            let node = navigation::identifier_at(&tree, nav_offset(&src, p.position, enc))?;
            let end = navigation::call_item(&m, &navigation::resolve(&m, node)?)?;
            Some(vec![item(&uri, &src, end, enc)])
        })
        .await)
    }

    pub(super) async fn on_incoming_calls(
        &self,
        params: CallHierarchyIncomingCallsParams,
    ) -> Result<Option<Vec<CallHierarchyIncomingCall>>> {
        let calls = calls_of(self, &params.item, navigation::incoming).await;
        Ok(calls.map(|cs| {
            cs.into_iter().map(|(from, from_ranges)| CallHierarchyIncomingCall { from, from_ranges }).collect()
        }))
    }

    pub(super) async fn on_outgoing_calls(
        &self,
        params: CallHierarchyOutgoingCallsParams,
    ) -> Result<Option<Vec<CallHierarchyOutgoingCall>>> {
        let calls = calls_of(self, &params.item, navigation::outgoing).await;
        Ok(calls
            .map(|cs| cs.into_iter().map(|(to, from_ranges)| CallHierarchyOutgoingCall { to, from_ranges }).collect()))
    }
}
