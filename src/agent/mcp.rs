//! `McpTools`: tools of external MCP servers as the engine's [`ToolExecutor`]. Each server is
//! started as a child process over stdio (rmcp's client), listed once, and offered to the model
//! as `<server>__<tool>`; and `ToolSet`, which joins several executors into one.
//!
//! The config file is the common `mcpServers` shape: `{"mcpServers": {"NAME": {"command": …,
//! "args": […], "env": {…}}}}`. External calls are not thinkledger's tools: they are not ledger
//! events of their own, and the run's `AgentToolReturned` fact is their record.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService, ServiceExt};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde::Deserialize;
use serde_json::Value;

use super::error::ReasoningError;
use super::traits::{BoxFuture, ToolDefinition, ToolExecutor, ToolOutcome};

/// One server of the config file.
#[derive(Debug, Clone, Deserialize)]
pub struct McpServerConfig {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// The config file.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpConfig {
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
}

impl McpConfig {
    /// Reads and parses `path`.
    pub fn read(path: &Path) -> Result<Self, ReasoningError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ReasoningError::InvalidInput(format!("cannot read {}: {e}", path.display()))
        })?;
        serde_json::from_str(&text).map_err(|e| {
            ReasoningError::InvalidInput(format!(
                "{} is not an MCP config ({{\"mcpServers\": {{\"NAME\": {{\"command\": …, \"args\": […]}}}}}}): {e}",
                path.display()
            ))
        })
    }
}

/// One running external server and the tools it offers.
struct Server {
    name: String,
    client: RunningService<RoleClient, ()>,
}

/// The tools of external MCP servers.
pub struct McpTools {
    servers: Vec<Server>,
    /// (exposed name, server index, the server's own tool name, its definition)
    tools: Vec<(String, usize, String, ToolDefinition)>,
}

impl McpTools {
    /// Starts every server of `config` and lists its tools.
    pub async fn start(config: &McpConfig) -> Result<Self, ReasoningError> {
        let mut servers = Vec::new();
        let mut tools = Vec::new();
        for (name, server) in &config.mcp_servers {
            let failed = |what: &str, e: &dyn std::fmt::Display| ReasoningError::Tool {
                tool: name.clone(),
                message: format!("{what}: {e}"),
            };
            let command = tokio::process::Command::new(&server.command).configure(|c| {
                c.args(&server.args);
                c.envs(&server.env);
            });
            // Its logs are its own: they would interleave with the model's text on the terminal.
            let (transport, _) = TokioChildProcess::builder(command)
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| failed("cannot start it", &e))?;
            let client = ().serve(transport).await.map_err(|e| failed("no handshake", &e))?;
            let listed = client
                .list_all_tools()
                .await
                .map_err(|e| failed("tools/list failed", &e))?;
            let index = servers.len();
            for tool in listed {
                let exposed = format!("{name}__{}", tool.name);
                tools.push((
                    exposed.clone(),
                    index,
                    tool.name.to_string(),
                    ToolDefinition {
                        name: exposed,
                        description: tool.description.as_deref().unwrap_or_default().to_owned(),
                        parameters: Value::Object((*tool.input_schema).clone()),
                    },
                ));
            }
            servers.push(Server {
                name: name.clone(),
                client,
            });
        }
        Ok(Self { servers, tools })
    }

    /// Keeps only the tools named in `names` (exposed names); all when `names` is empty.
    #[must_use]
    pub fn only(mut self, names: &[String]) -> Self {
        if !names.is_empty() {
            self.tools.retain(|(n, ..)| names.contains(n));
        }
        self
    }
}

fn outcome_of(result: &CallToolResult) -> ToolOutcome {
    let text: String = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    let text = if text.is_empty() {
        result
            .structured_content
            .as_ref()
            .map(Value::to_string)
            .unwrap_or_default()
    } else {
        text
    };
    if result.is_error == Some(true) {
        let code = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v.get("code").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| "tool_error".to_owned());
        ToolOutcome::failed(code, text)
    } else {
        ToolOutcome::succeeded(text)
    }
}

impl ToolExecutor for McpTools {
    fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools.iter().map(|(.., d)| d.clone()).collect()
    }

    fn execute<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Result<ToolOutcome, ReasoningError>> {
        Box::pin(async move {
            let Some((_, index, own, _)) = self.tools.iter().find(|(n, ..)| n == name) else {
                return Ok(ToolOutcome::failed(
                    "unknown_tool",
                    format!("no external tool is named {name}"),
                ));
            };
            let server = self
                .servers
                .get(*index)
                .ok_or_else(|| ReasoningError::Tool {
                    tool: name.to_owned(),
                    message: "its server is gone".to_owned(),
                })?;
            let mut params = CallToolRequestParams::new(own.clone());
            if let Value::Object(map) = arguments {
                params = params.with_arguments(map.clone());
            }
            let result =
                server
                    .client
                    .call_tool(params)
                    .await
                    .map_err(|e| ReasoningError::Tool {
                        tool: format!("{}/{own}", server.name),
                        message: e.to_string(),
                    })?;
            Ok(outcome_of(&result))
        })
    }
}

/// Several executors as one: each call goes to the one that offers the tool.
pub struct ToolSet {
    parts: Vec<Arc<dyn ToolExecutor>>,
}

impl ToolSet {
    /// Joins `parts` (a name offered twice goes to the first).
    pub fn new(parts: Vec<Arc<dyn ToolExecutor>>) -> Self {
        Self { parts }
    }
}

impl ToolExecutor for ToolSet {
    fn definitions(&self) -> Vec<ToolDefinition> {
        let mut all: Vec<ToolDefinition> = Vec::new();
        for part in &self.parts {
            for d in part.definitions() {
                if !all.iter().any(|a| a.name == d.name) {
                    all.push(d);
                }
            }
        }
        all
    }

    fn execute<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Result<ToolOutcome, ReasoningError>> {
        Box::pin(async move {
            for part in &self.parts {
                if part.definitions().iter().any(|d| d.name == name) {
                    return part.execute(name, arguments).await;
                }
            }
            Ok(ToolOutcome::failed(
                "unknown_tool",
                format!("no tool is named {name}"),
            ))
        })
    }
}
