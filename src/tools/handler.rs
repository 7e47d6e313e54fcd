//! The rmcp `ServerHandler` of [`ThinkServer`]: what the server says it can do, `tools/call`
//! (handed to [`ThinkServer::call`]), the logging level, the tool list (the caller's) and one
//! tool, subscriptions (`listen`), prompts, and the `ledger://` resources and templates.

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
    Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ResourceContents, ServerCapabilities, ServerConfig, SubscriptionFilter,
    Tool,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use super::arrival::Admission;
use super::origin::CallOrigin;
use super::utilities::Reporter;
use super::{
    Call, IDEMPOTENCY_META_KEY, INSTRUCTIONS, LIST_TTL_MS, ThinkServer, actor, pretty, prompts,
    reasoning, resources,
};

impl ServerHandler for ThinkServer {
    #[allow(deprecated)] // MCP logging (see `utilities`)
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_logging()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_prompts()
                .build(),
        )
        .with_server_info(Implementation::new(
            env!("CARGO_PKG_NAME"),
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(INSTRUCTIONS.as_str())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // A `_meta` member of the params, else of the request (rmcp keeps it in either).
        let meta = |key: &str| {
            request
                .meta
                .as_ref()
                .and_then(|m| m.0.0.get(key))
                .or_else(|| context.meta.0.0.get(key))
        };
        let key = meta(IDEMPOTENCY_META_KEY).and_then(|v| v.as_str().map(str::to_owned));
        let origin = CallOrigin::of(meta, &context);
        let arguments = request.arguments.map_or(Value::Null, Value::Object);
        let actor = actor(&context, self.transport);
        let slot = self.slot(&context, &actor.principal);
        // A first thought naming no session opens a new conversation: it starts a session of
        // its own where no connection tells conversations apart, and after the current
        // session concluded (its last thought needed no next one).
        if request.name == crate::app::SEQUENTIALTHINKING_TOOL
            && crate::app::thinking::opens_a_conversation(&arguments)
            && (Self::standalone(&context) || self.concluded(&slot.current()).await)
        {
            slot.begin_new();
        }
        let order = (!Self::standalone(&context)).then(|| self.connection_order.clone());
        let admission = Admission::of(self.arrival.as_ref(), &context).in_order(order);
        let stateless_revision = Self::stateless_revision(&context);
        let reporter = Reporter::new(
            &context.peer,
            self.log_level_of(&context),
            context.meta.get_progress_token(),
            context.ct.clone(),
        );
        let call = Call {
            tool: request.name.to_string(),
            arguments,
            actor,
            slot,
            toolsets: self.toolsets(&context),
            idempotency_key: key,
            reporter: reporter.clone(),
            origin,
        };
        let peer = (!stateless_revision).then_some(&context.peer);
        let call = self.call(call, peer);
        let result = admission.scope(call).await;
        self.report_state().await;
        reporter.finish().await;
        Ok(result.into())
    }

    /// `logging/setLevel` (session-era revisions): the connection's level from now on. The
    /// 2026-07-28 revision removed the method (a request there carries its own level).
    #[allow(deprecated)] // MCP logging (see `utilities`)
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if Self::stateless_revision(&context) {
            return Err(ErrorData::method_not_found::<
                rmcp::model::SetLevelRequestMethod,
            >());
        }
        self.log_level.set(request.level);
        self.report_state().await;
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let enabled = self.toolsets(&context).get();
        Ok(
            ListToolsResult::with_all_items(self.catalog.tools(&enabled))
                .with_ttl_ms(0)
                .with_cache_scope(CacheScope::Private),
        )
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        // Any tool, enabled or not: a call to a disabled one must still reach `call_tool`, to be
        // refused with its set named and recorded.
        self.catalog.entry(name).map(|e| e.tool.clone())
    }

    /// 2026-07-28 `subscriptions/listen`: the one notification this server sends is its tool
    /// list changing (rmcp keeps what the client asked for and the server advertises).
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    /// A listen stream tells its caller (the connection, or the principal of standalone
    /// requests) each time its toolsets change, until the client cancels it.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.toolsets(context.request_context()).changes();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    if let Err(e) = context.sink().notify_tool_list_changed().await {
                        // Not asked for on this stream, or the stream is gone.
                        tracing::debug!(error = %e, "tools/list_changed not sent on a listen stream");
                    }
                }
            }
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(prompts::list())
            .with_ttl_ms(LIST_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        prompts::get(&request.name, request.arguments.as_ref()).map(Into::into)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut list = resources::list();
        list.extend(reasoning::list());
        Ok(ListResourcesResult::with_all_items(list)
            .with_ttl_ms(LIST_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let mut templates = resources::templates();
        templates.extend(reasoning::templates());
        Ok(ListResourceTemplatesResult::with_all_items(templates)
            .with_ttl_ms(LIST_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let order = (!Self::standalone(&context)).then(|| self.connection_order.clone());
        let admission = Admission::of(self.arrival.as_ref(), &context).in_order(order);
        if request.uri.starts_with(reasoning::PREFIX) {
            let read = reasoning::read(
                &self.ledger,
                &self.catalog,
                self.transport,
                &*self.effects,
                &request.uri,
                actor(&context, self.transport),
            );
            let document = admission.scope(read).await?;
            return Ok(ReadResourceResult::new(vec![
                ResourceContents::text(pretty(&document), request.uri.clone())
                    .with_mime_type("application/json"),
            ])
            .into());
        }
        admission
            .scope(resources::read(
                &self.ledger,
                &request.uri,
                actor(&context, self.transport),
            ))
            .await
            .map(Into::into)
    }
}
