from tests.llm_double.server import LLMDouble, Reply, double_resource

__all__ = ["LLMDouble", "Reply", "double_resource"]
