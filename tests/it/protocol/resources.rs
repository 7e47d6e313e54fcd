//! Reading a resource that does not exist, over stdio through the real binary: every such read,
//! `ledger://` or `reasoning://` or another scheme, is the JSON-RPC resource-not-found error
//! with `data: {"uri": …}`, and an unknown URI's message names every resource and template the
//! server lists.

use rmcp::model::ErrorCode;
use rmcp::service::ServiceError;
use serde_json::json;

use crate::common::*;

const NO_SUCH_SESSION: &str = "0b0e8f1c-6d0a-4f4e-9a53-3f1c2a9d7e65";

#[tokio::test]
async fn a_read_of_a_missing_resource_names_its_uri_and_what_exists() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &[]).await;
    let s = &*server;
    let resources: Vec<String> = within("resources/list", s.list_all_resources())
        .await
        .expect("resources/list")
        .into_iter()
        .map(|r| r.uri.clone())
        .collect();
    let templates: Vec<String> =
        within("resources/templates/list", s.list_all_resource_templates())
            .await
            .expect("resources/templates/list")
            .into_iter()
            .map(|t| t.uri_template.clone())
            .collect();
    assert!(resources.contains(&"ledger://sessions".to_owned()));
    assert!(resources.iter().any(|r| r.starts_with("reasoning://")));
    assert!(templates.contains(&"ledger://session/{id}".to_owned()));
    assert!(templates.iter().any(|t| t.starts_with("reasoning://")));

    // (uri, whether it names no resource at all, what the message must point at)
    let cases = [
        ("ledger://nothing".to_owned(), true, "ledger://sessions"),
        (
            "reasoning://nothing".to_owned(),
            true,
            "reasoning://thinking-modes",
        ),
        (
            "file:///etc/hostname".to_owned(),
            true,
            "reasoning://schemas/{name}",
        ),
        (
            format!("reasoning://session/{NO_SUCH_SESSION}/nothing"),
            true,
            "ledger://session/{id}",
        ),
        (
            "ledger://session/not-a-uuid".to_owned(),
            false,
            "ledger://sessions",
        ),
        (
            format!("ledger://session/{NO_SUCH_SESSION}"),
            false,
            "ledger://sessions",
        ),
        (
            format!("reasoning://session/{NO_SUCH_SESSION}/deliberation"),
            false,
            "start_deliberation",
        ),
        (
            "reasoning://session/not-a-uuid/assumptions".to_owned(),
            false,
            "ledger://sessions",
        ),
        (
            "reasoning://schemas/no_such_tool".to_owned(),
            false,
            "reasoning://schemas/index",
        ),
    ];
    for (uri, unknown, hint) in &cases {
        let error = match try_read(s, uri).await {
            Err(ServiceError::McpError(error)) => error,
            other => panic!("{uri} should be a resource-not-found error, got {other:?}"),
        };
        assert_eq!(
            error.code,
            ErrorCode::RESOURCE_NOT_FOUND,
            "{uri}: {error:?}"
        );
        assert_eq!(error.code.0, -32002, "{uri}");
        assert_eq!(error.data, Some(json!({ "uri": uri })), "{uri}");
        assert!(
            error.message.contains(hint),
            "{uri}: the message points at {hint}: {}",
            error.message
        );
        if *unknown {
            for listed in resources.iter().chain(&templates) {
                assert!(
                    error.message.contains(listed.as_str()),
                    "{uri}: the message names {listed}: {}",
                    error.message
                );
            }
        }
    }
    server.stop().await;
    // Reads record nothing.
    assert_intact(dir.path(), 0).await;
}
