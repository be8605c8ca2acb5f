//! `workspace/didChangeWorkspaceFolders` (changes state): the folders, then the settings read again.

use super::*;

impl Server {
    pub(super) async fn on_did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        {
            let mut st = self.state();
            let removed: Vec<_> = params.event.removed.iter().filter_map(|f| file_path(&f.uri)).collect();
            st.folders.retain(|f| !removed.contains(f));
            st.folders.extend(params.event.added.iter().filter_map(|f| file_path(&f.uri)));
            crate::bench::history::set_workspace_roots(st.folders.clone());
        }
        self.reload_settings().await;
    }
}
