//! A test harness for deliberation decisions: a real writer on an in-memory store, calls made
//! as a client would make them (one connection session), answers as the client sees them.

use serde_json::Value;

use crate::app::{App, AppConfig, Command};
use crate::effects::Effects as _;
use crate::events::{Actor, OutcomeStatus, SessionId};
use crate::ledger::{Committed, LedgerHandle, MemStore, WriterConfig, open_ledger};

pub struct Given {
    pub ledger: LedgerHandle<App>,
    pub connection: SessionId,
}

pub fn given() -> Given {
    let ledger = open_ledger(
        MemStore::default(),
        App::new(AppConfig::default()),
        WriterConfig::default(),
    )
    .expect("open");
    Given {
        ledger,
        connection: SessionId::random(),
    }
}

impl Given {
    /// One call; the committed answer (status, body, seq).
    pub async fn call(&self, tool: &str, arguments: Value) -> Committed {
        let actor = Actor {
            principal: "local".into(),
            transport: "test".into(),
            client_name: None,
            client_version: None,
            role: Default::default(),
            user_ids: Vec::new(),
        };
        let command = Command::tool_call(
            tool,
            arguments,
            actor,
            self.connection.clone(),
            crate::effects::SystemEffects.prepare(),
        );
        self.ledger.submit(command).await.expect("recorded")
    }

    /// A call that must succeed; its body.
    pub async fn ok(&self, tool: &str, arguments: Value) -> Value {
        let c = self.call(tool, arguments).await;
        assert_eq!(c.status, OutcomeStatus::Ok, "{tool}: {:#}", c.body);
        c.body
    }

    /// A call that must be refused with `code`; its body.
    pub async fn refused(&self, tool: &str, arguments: Value, code: &str) -> Value {
        let c = self.call(tool, arguments).await;
        assert_eq!(c.status, OutcomeStatus::Rejected, "{tool}: {:#}", c.body);
        assert_eq!(c.body["code"], code, "{tool}: {:#}", c.body);
        c.body
    }

    /// Reads the application state.
    pub async fn read<T: Send + 'static>(&self, f: impl FnOnce(&App) -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        self.ledger
            .query(Box::new(move |app| {
                let _ = tx.send(f(app));
                Value::Null
            }))
            .await
            .expect("query");
        rx.recv().expect("answer")
    }
}
