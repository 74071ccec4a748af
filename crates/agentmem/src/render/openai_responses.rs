pub(super) fn render(_r: &super::RenderRequest<'_>) -> serde_json::Value { serde_json::Value::Null }
