//! A minimal MCP client over stdio for the benches: newline-delimited JSON-RPC through
//! serde_json only, so what is timed is the server.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// One stdio MCP server process and the client's end of its pipes.
pub struct StdioClient {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    line: String,
    next_id: u64,
}

impl StdioClient {
    /// `thinkledger --data-dir DATA_DIR serve`, logging to `DATA_DIR/server.log`.
    pub fn spawn(data_dir: &Path) -> Self {
        let mut command = Command::new(super::server_binary());
        command.arg("--data-dir").arg(data_dir).arg("serve");
        Self::spawn_command(command, &data_dir.join("server.log"))
    }

    /// `thinkledger --data-dir DATA_DIR serve`, logging to `log` (several servers on one
    /// directory).
    pub fn spawn_logged(data_dir: &Path, log: &Path) -> Self {
        let mut command = Command::new(super::server_binary());
        command.arg("--data-dir").arg(data_dir).arg("serve");
        Self::spawn_command(command, log)
    }

    /// Any stdio MCP server (the reference server, say), logging to `log`.
    pub fn spawn_command(mut command: Command, log: &Path) -> Self {
        let log = File::create(log).expect("create server log");
        let mut child = command
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawn the server");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Self {
            child,
            stdin,
            stdout,
            line: String::new(),
            next_id: 0,
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to server");
        stdin.flush().expect("flush to server");
    }

    /// Prepares one request line (outside any timed section).
    pub fn request(&mut self, method: &str, params: Value) -> (u64, Vec<u8>) {
        self.next_id += 1;
        let id = self.next_id;
        let mut bytes = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .expect("serialize request");
        bytes.push(b'\n');
        (id, bytes)
    }

    /// Sends a prepared request and reads lines until its response; returns the response and
    /// the instant its line was fully read.
    pub fn round_trip(&mut self, id: u64, bytes: &[u8]) -> (Value, Instant) {
        self.send(bytes);
        loop {
            self.line.clear();
            let n = self
                .stdout
                .read_line(&mut self.line)
                .expect("read from server");
            let at = Instant::now();
            assert!(n > 0, "server closed stdout; see its log");
            let message: Value = serde_json::from_str(&self.line).expect("server sent a JSON line");
            if message.get("id").and_then(Value::as_u64) == Some(id) {
                return (message, at);
            }
        }
    }

    pub fn initialize(&mut self) {
        let (id, bytes) = self.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "thinkledger-bench", "version": "0"},
            }),
        );
        let (response, _) = self.round_trip(id, &bytes);
        assert!(
            response["result"]["protocolVersion"].is_string(),
            "initialize failed: {response}"
        );
        self.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    }

    /// One timed `sequentialthinking` call; checks it succeeded and got the expected seq.
    pub fn think(&mut self, number: u32, total: u32, expected_seq: u64) -> Duration {
        let (took, response) = self.timed_thought(number, total);
        assert_eq!(
            response["result"]["structuredContent"]["seq"].as_u64(),
            Some(expected_seq),
            "unexpected seq: {response}"
        );
        took
    }

    /// A new session's first thought on a server just started, sent again while the ledger is
    /// still opening (refused with `ledger_opening` after the server's wait, recording nothing),
    /// as a client would; checks it became event `expected_seq`. Returns how often it was refused.
    pub fn first_thought(&mut self, expected_seq: u64) -> u32 {
        let mut refused = 0;
        loop {
            let (id, bytes) = self.request(
                "tools/call",
                json!({"name": "sequentialthinking", "arguments": super::thought_args(1, 1)}),
            );
            let (response, _) = self.round_trip(id, &bytes);
            let text = response["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or("");
            if response["result"]["isError"] == json!(true) && text.contains("ledger_opening") {
                refused += 1;
                continue;
            }
            assert_eq!(
                response["result"]["structuredContent"]["seq"].as_u64(),
                Some(expected_seq),
                "first call failed: {response}"
            );
            return refused;
        }
    }

    /// One timed `sequentialthinking` call that succeeded, and its response (any server).
    pub fn timed_thought(&mut self, number: u32, total: u32) -> (Duration, Value) {
        let (id, bytes) = self.request(
            "tools/call",
            json!({"name": "sequentialthinking", "arguments": super::thought_args(number, total)}),
        );
        let start = Instant::now();
        let (response, end) = self.round_trip(id, &bytes);
        let result = &response["result"];
        assert!(
            result["isError"] != json!(true) && result.is_object(),
            "call failed: {response}"
        );
        (end - start, response)
    }

    /// One `tools/call` of `tool`; returns its result (`isError`, `content`,
    /// `structuredContent`) as the server sent it, or panics on a JSON-RPC error.
    pub fn call_tool(&mut self, tool: &str, arguments: Value) -> Value {
        let (id, bytes) = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let (mut response, _) = self.round_trip(id, &bytes);
        assert!(response["result"].is_object(), "{tool} failed: {response}");
        response["result"].take()
    }

    /// Closes stdin (the server then syncs and exits) and waits for a clean exit.
    pub fn finish(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for server") {
                assert!(status.success(), "server exited with {status}");
                return;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("server did not exit after stdin closed");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for StdioClient {
    /// A bench that panics mid-run must not leave its server running.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
