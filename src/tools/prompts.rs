//! MCP prompts: the prompt packs the thinking modes name (reasoning://thinking-modes), each
//! telling a client how to run its mode with this server's tools.

use std::collections::BTreeMap;

use rmcp::ErrorData;
use rmcp::model::{GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
use serde_json::{Map, Value};

use crate::app::deliberation::modes;

pub(super) fn list() -> Vec<Prompt> {
    modes::prompt_packs()
        .into_iter()
        .map(|pack| {
            let arguments = pack
                .arguments
                .iter()
                .map(|a| {
                    PromptArgument::new(a.name.clone())
                        .with_description(a.description.clone())
                        .with_required(a.required)
                })
                .collect();
            let mut prompt =
                Prompt::new(pack.name.clone(), Some(pack.description), Some(arguments));
            prompt.title = Some(pack.title);
            prompt
        })
        .collect()
}

pub(super) fn get(
    name: &str,
    arguments: Option<&Map<String, Value>>,
) -> Result<GetPromptResult, ErrorData> {
    let packs = modes::prompt_packs();
    let Some(pack) = packs.iter().find(|p| p.name == name) else {
        let names: Vec<&str> = packs.iter().map(|p| p.name.as_str()).collect();
        return Err(ErrorData::invalid_params(
            format!(
                "no prompt named \"{name}\"; this server offers {}",
                names.join(", ")
            ),
            None,
        ));
    };
    let args: BTreeMap<String, String> = arguments
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let text = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
            (k.clone(), text)
        })
        .collect();
    let messages = pack
        .render(&args)
        .map_err(|e| ErrorData::invalid_params(e, None))?
        .into_iter()
        .map(|m| {
            let role = if m.role == "assistant" {
                Role::Assistant
            } else {
                Role::User
            };
            PromptMessage::new_text(role, m.text)
        })
        .collect();
    Ok(GetPromptResult::new(messages).with_description(pack.description.clone()))
}
