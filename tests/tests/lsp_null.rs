//! `lsp_null`, the baseline `lsp_latency --baseline` runs: a server that does
//! no work answers every change at once with a publication of kernel-lsp's
//! size, for the version the change carries.

use std::time::Duration;

use kernel_lsp_tests::stdio::StdioServer;
use serde_json::json;

#[test]
fn the_null_server_answers_each_change_with_a_publication_of_that_version() {
    let command = vec![env!("CARGO_BIN_EXE_lsp_null").to_string(), "serve".to_string()];
    let mut server = StdioServer::start(&command, None, Duration::from_secs(20));
    let init = server.request("initialize", json!({"capabilities": {}}));
    assert_eq!(init["result"]["capabilities"]["textDocumentSync"], 2, "{init}");
    server.notify("initialized", json!({}));
    let uri = "file:///tmp/null.py";
    server.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}}),
    );
    for version in [1, 7, 8] {
        if version > 1 {
            server.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": "x = 2\n"}]}),
            );
        }
        let published = server.wait(|m| m["method"] == "textDocument/publishDiagnostics");
        assert_eq!(published["params"]["version"], version, "{}", published["params"]["version"]);
        assert_eq!(published["params"]["uri"], uri);
        let diagnostics = published["params"]["diagnostics"].as_array().expect("diagnostics");
        // kernel-lsp's publication for the 5,000-line benchmark file: 220 diagnostics, about 84 KB.
        assert_eq!(diagnostics.len(), 220);
        let size = published.to_string().len();
        assert!((70_000..100_000).contains(&size), "a publication of {size} bytes");
    }
    server.stop();
}
