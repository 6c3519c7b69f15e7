"""The service's OpenAPI 3.1 description, served at /openapi.json (and fuzzed by the test suite)."""

from __future__ import annotations

from typing import Any

from hybrid_weather.agent.llm.models import MAX_REPLY_TOKENS, TEMPERATURE_RANGE

from .responses import ID_PATTERN, PREFIX

_ERROR_CODES = {
    "400": "The body is not JSON",
    "401": "A valid API key is required (Authorization: Bearer KEY; for a GET, the dashboard's login cookie too)",
    "403": "The request would go to the model as it came, and pass-through is off (HYBRID_WEATHER_PASS_THROUGH)",
    "408": "The body did not arrive within the body timeout (HYBRID_WEATHER_BODY_TIMEOUT); the connection is closed",
    "404": "What the request names is not here: a model this service does not answer with (model_not_found), "
    "a request id the ledger does not hold (request_not_found), or a previous response of the caller's that is "
    "not kept (previous_response_not_found)",
    "413": "The body is larger than 64 KiB",
    "422": "The request is JSON but not what this endpoint takes",
    "429": "Rate limit reached; retry-after says when to try again",
    "503": "The weather provider or the model is unavailable (or the ledger cannot be read)",
    "504": "The weather provider or the model did not answer within the deadline",
}


def _errors(*codes: str) -> dict[str, Any]:
    return {
        code: {"description": _ERROR_CODES[code], "content": {"application/json": {"schema": _ref("Error")}}}
        for code in codes
    }


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(name: str, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref(name)}}}


def _body(name: str) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": _ref(name)}}}


_DATE = {
    "type": "string",
    "format": "date",
    "pattern": r"^(19[7-9][0-9]|20[0-9]{2})-[0-9]{2}-[0-9]{2}$",
    "description": "YYYY-MM-DD, from 1970-01-01 to 2099-12-31",
}
_NULLABLE_STRING = {"type": ["string", "null"]}
_REPORT_PARAMETERS = [
    {
        "name": "days",
        "in": "query",
        "required": False,
        "schema": {"type": "integer", "minimum": 1, "maximum": 3650, "default": 30},
    },
    {
        "name": "include_demo",
        "in": "query",
        "required": False,
        "description": "1: count the requests a router on the demo provider answered (synthetic weather)",
        "schema": {"enum": ["0", "1", "false", "true"], "default": "0"},
    },
]

_DECISION = {
    "type": "object",
    "required": ["query", "route", "cities", "dates", "aspect", "reason", "reason_code"],
    "properties": {
        "query": {"type": "string"},
        "route": {"enum": ["rule", "clarify", "llm"]},
        "cities": {"type": "array", "items": {"type": "string"}},
        "dates": {"type": "array", "items": {"type": "string", "format": "date"}},
        "aspect": _NULLABLE_STRING,
        "reason": {"type": "string"},
        "reason_code": {
            "type": "string",
            "description": "the rule that decided (lookup, no_place, open_ended:advice, …)",
        },
    },
}

SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["type", "message", "code"],
                "properties": {"type": {"type": "string"}, "message": {"type": "string"}, "code": _NULLABLE_STRING},
            },
            "partial": {
                **_ref("Answer"),
                "description": "/v1/ask when the model failed: the question's plain "
                "weather part, answered by the rules (as the CLI's --json)",
            },
        },
    },
    "AskRequest": {
        "type": "object",
        "required": ["query"],
        "properties": {
            "query": {"type": "string", "maxLength": 2000, "examples": ["上海今天天气"]},
            "today": _DATE,
            "session_id": {
                "type": "string",
                "pattern": "^[A-Za-z0-9._:-]{16,128}$",
                "description": "A conversation of this key's to continue (the session_id an answer returned); "
                "none begins a new one",
            },
        },
    },
    "RouteRequest": {
        "type": "object",
        "required": ["query"],
        "properties": {"query": {"type": "string", "maxLength": 2000}, "today": _DATE},
    },
    "FeedbackRequest": {
        "type": "object",
        "required": ["request_id", "verdict"],
        "properties": {
            "request_id": {
                "type": "string",
                "pattern": f"^(chatcmpl-|{PREFIX})?[0-9a-f]{{22}}$",
                "description": "The request_id (or completion id) an answer carried",
            },
            "verdict": {"enum": ["wrong", "right"]},
            "comment": {"type": "string", "maxLength": 1000},
        },
    },
    "Feedback": {
        "type": "object",
        "required": ["request_id", "verdict"],
        "properties": {
            "request_id": {"type": "string"},
            "verdict": {"enum": ["wrong", "right"]},
            "pending": {"const": True, "description": "202: kept until the answer's row is stored (10 minutes)"},
        },
    },
    "Decision": _DECISION,
    "Answer": {
        "type": "object",
        "required": [
            "query",
            "route",
            "answer",
            "decision",
            "data",
            "source",
            "stale",
            "latency_ms",
            "cost_usd",
            "stale_age_s",
            "attribution",
            "request_id",
        ],
        "properties": {
            "query": {"type": "string"},
            "route": {"enum": ["rule", "clarify", "llm"]},
            "answer": {"type": "string"},
            "decision": {k: v for k, v in _DECISION.items() if k != "required"}
            | {"required": ["route", "cities", "dates", "aspect", "reason", "reason_code"]},
            "data": {"type": "object"},
            "source": _NULLABLE_STRING,
            "stale": {"type": "boolean"},
            "latency_ms": {"type": "number"},
            "cost_usd": {"type": ["number", "null"]},
            "stale_age_s": {"type": ["number", "null"]},
            "attribution": _NULLABLE_STRING,
            "request_id": _NULLABLE_STRING,
            "session_id": {"type": "string", "description": "/v1/ask: the conversation to follow up in"},
        },
    },
    "ChatRequest": {
        "type": "object",
        "required": ["messages"],
        "properties": {
            "model": {
                "type": "string",
                "pattern": "\\S",  # a name, not blanks: those are 422 invalid_model
                "description": "A model of the service's price table, or its "
                "configured one; any other is 404 model_not_found",
            },
            "temperature": {"type": "number", "minimum": TEMPERATURE_RANGE[0], "maximum": TEMPERATURE_RANGE[1]},
            "max_tokens": {"type": "integer", "minimum": 1, "maximum": MAX_REPLY_TOKENS},
            "max_completion_tokens": {"type": "integer", "minimum": 1, "maximum": MAX_REPLY_TOKENS},
            "messages": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["role"],
                    "properties": {
                        "role": {"enum": ["system", "developer", "user", "assistant", "tool"]},
                        "content": {"type": ["string", "array", "null"]},
                    },
                },
            },
            "stream": {"type": "boolean"},
            "stream_options": {"type": "object", "properties": {"include_usage": {"type": "boolean"}}},
            "today": _DATE,
            "tools": {"type": "array", "description": "present: the request goes upstream as it came"},
        },
    },
    "ChatCompletion": {
        "type": "object",
        "description": "Ours carry every key; a pass-through answer is the upstream's, as it came",
        "required": ["id", "object", "choices"],
        "properties": {
            "id": {"type": "string"},
            "object": {"const": "chat.completion"},
            "created": {"type": "integer"},
            "model": {"type": ["string", "null"]},
            "choices": {"type": "array", "items": {"type": "object"}},
            "usage": {"type": ["object", "null"]},
        },
    },
    "ResponsesRequest": {
        "type": "object",
        "required": ["input"],
        "properties": {
            "model": {
                "type": "string",
                "pattern": "\\S",
                "description": "A model of the service's price table, or its configured one; any other is 404",
            },
            "input": {
                "description": "The question as text, or a list of messages (the last one the user's question)",
                "oneOf": [
                    {"type": "string"},
                    {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["role"],
                            "properties": {
                                "type": {"const": "message"},
                                "role": {"enum": ["system", "developer", "user", "assistant"]},
                                "content": {"type": ["string", "array"]},
                            },
                        },
                    },
                ],
            },
            "instructions": {"type": "string", "description": "Echoed; sent on with a request that passes through"},
            "previous_response_id": {
                "type": "string",
                "pattern": ID_PATTERN,
                "description": "The response this one follows (the caller's)",
            },
            "max_output_tokens": {"type": "integer", "minimum": 1, "maximum": MAX_REPLY_TOKENS},
            "temperature": {"type": "number", "minimum": TEMPERATURE_RANGE[0], "maximum": TEMPERATURE_RANGE[1]},
            "store": {"type": "boolean", "description": "false: the conversation is not kept for a follow-up"},
            "stream": {"type": "boolean"},
            "today": _DATE,
            "tools": {"type": "array", "description": "present: the request goes upstream as it came"},
        },
    },
    "Response": {
        "type": "object",
        "description": "Ours carry these keys and more (OpenAI's Response); a pass-through answer is the upstream's",
        "required": ["id", "object", "output"],
        "properties": {
            "id": {"type": "string"},
            "object": {"const": "response"},
            "created_at": {"type": "number"},
            "status": {"type": ["string", "null"]},
            "model": {"type": ["string", "null"]},
            "output": {"type": "array", "items": {"type": "object"}},
            "usage": {"type": ["object", "null"]},
        },
    },
    "Model": {
        "type": "object",
        "description": "A model a request may name, as OpenAI describes one",
        "required": ["id", "object", "created", "owned_by"],
        "properties": {
            "id": {"type": "string"},
            "object": {"const": "model"},
            "created": {"type": "integer", "description": "When its facts were checked (as_of); 0: unknown"},
            "owned_by": {"type": "string"},
        },
    },
    "ModelList": {
        "type": "object",
        "required": ["object", "data"],
        "properties": {"object": {"const": "list"}, "data": {"type": "array", "items": _ref("Model")}},
    },
    "Report": {"type": "object", "required": ["days"], "properties": {"days": {"type": "integer"}}},
    "Health": {"type": "object", "required": ["status"], "properties": {"status": {"type": "string"}}},
}

_LIMITED = ("401", "429")
OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {
        "title": "hybrid-weather",
        "version": "1",
        "description": "Chinese weather questions answered "
        "without a model when they can be, with an OpenAI-compatible drop-in endpoint.",
    },
    "components": {
        "schemas": SCHEMAS,
        "securitySchemes": {
            "bearer": {"type": "http", "scheme": "bearer"},
            "dashboard": {
                "type": "apiKey",
                "in": "cookie",
                "name": "hybrid_weather_dashboard",
                "description": "Set by POST /login; opens GET requests only",
            },
        },
    },
    # Keys are optional (HYBRID_WEATHER_API_KEYS): when set, every path but /healthz, /readyz and /login needs one.
    "security": [{}, {"bearer": []}],
    "paths": {
        "/v1/ask": {
            "post": {
                "summary": "Answer a question (the CLI's --json object)",
                "requestBody": _body("AskRequest"),
                "responses": {
                    "200": _json("Answer", "The answer"),
                    **_errors("400", *_LIMITED, "408", "413", "422", "503", "504"),
                },
            }
        },
        "/v1/route": {
            "post": {
                "summary": "Decide what to do with a question (no I/O)",
                "requestBody": _body("RouteRequest"),
                "responses": {
                    "200": _json("Decision", "The decision"),
                    **_errors("400", *_LIMITED, "408", "413", "422"),
                },
            }
        },
        "/v1/feedback": {
            "post": {
                "summary": "A user's verdict on an answer, kept in the ledger (misses and the dashboard list "
                "rule answers marked wrong first)",
                "requestBody": _body("FeedbackRequest"),
                "responses": {
                    "200": _json("Feedback", "The verdict, kept"),
                    "202": _json("Feedback", "The verdict, applied when its answer's row is stored"),
                    **_errors("400", *_LIMITED, "404", "408", "413", "422", "503"),
                },
            }
        },
        "/v1/chat/completions": {
            "post": {
                "summary": "OpenAI-compatible chat completions: rule questions without a model, others through it",
                "requestBody": _body("ChatRequest"),
                "responses": {
                    "200": {
                        "description": "A chat.completion object, or Server-Sent Events of chat.completion.chunk "
                        "objects when stream is true",
                        "headers": {
                            "x-hybrid-weather-route": {"schema": {"enum": ["rule", "clarify", "llm", "pass-through"]}}
                        },
                        "content": {
                            "application/json": {"schema": _ref("ChatCompletion")},
                            "text/event-stream": {
                                "schema": {
                                    "description": "data: chat.completion.chunk objects, then data: [DONE]; "
                                    "an LLM answer's text comes as the model writes it, and a failure after "
                                    'its first token is a data: {"error": {type, message, code}} event'
                                }
                            },
                        },
                    },
                    **_errors("400", *_LIMITED, "403", "404", "408", "413", "422", "503", "504"),
                },
            }
        },
        "/v1/responses": {
            "post": {
                "summary": "The Responses API: the questions /v1/chat/completions answers, a follow-up naming the "
                "response it follows",
                "requestBody": _body("ResponsesRequest"),
                "responses": {
                    "200": {
                        "description": "A response object, or Server-Sent Events (response.created, "
                        "response.output_text.delta, …, response.completed) when stream is true",
                        "headers": {
                            "x-hybrid-weather-route": {"schema": {"enum": ["rule", "clarify", "llm", "pass-through"]}}
                        },
                        "content": {
                            "application/json": {"schema": _ref("Response")},
                            "text/event-stream": {
                                "schema": {
                                    "description": "event:/data: pairs of the Response*Event objects; a failure "
                                    "after the first delta is an `error` event, then response.failed"
                                }
                            },
                        },
                    },
                    **_errors("400", *_LIMITED, "403", "404", "408", "413", "422", "503", "504"),
                },
            }
        },
        "/v1/models": {
            "get": {
                "summary": "The models a request may name: the configured one first, then the price table's "
                "(models.json), then hybrid-weather-rules",
                "responses": {"200": _json("ModelList", "OpenAI's list of models"), **_errors(*_LIMITED)},
            }
        },
        "/v1/models/{model}": {
            "get": {
                "summary": "One model a request may name",
                "parameters": [{"name": "model", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": {"200": _json("Model", "The model"), **_errors(*_LIMITED, "404")},
            }
        },
        "/v1/savings": {
            "get": {
                "summary": "What routing saved (the `savings --json` object)",
                "parameters": _REPORT_PARAMETERS,
                "responses": {"200": _json("Report", "The report"), **_errors(*_LIMITED, "422", "503")},
            }
        },
        "/v1/misses": {
            "get": {
                "summary": "What the router missed (the `misses --json` object)",
                "parameters": _REPORT_PARAMETERS,
                "responses": {"200": _json("Report", "The report"), **_errors(*_LIMITED, "422", "503")},
            }
        },
        "/openapi.json": {
            "get": {
                "summary": "This description",
                "security": [{}, {"bearer": []}, {"dashboard": []}],
                "responses": {
                    "200": {
                        "description": "OpenAPI 3.1",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                    **_errors(*_LIMITED),
                },
            }
        },
        "/healthz": {"get": {"summary": "Alive", "security": [], "responses": {"200": _json("Health", "Alive")}}},
        "/readyz": {
            "get": {
                "summary": "Ready: the ledger writable, the provider's circuit closed, the cache reachable; "
                "each check's details (the ledger's location, its problem) only to a caller with a valid key",
                "security": [],
                "responses": {"200": _json("Health", "Ready"), "503": _json("Health", "Not ready")},
            }
        },
        "/metrics": {
            "get": {
                "summary": "Prometheus metrics of every worker",
                "responses": {
                    "200": {
                        "description": "Prometheus text format",
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    },
                    **_errors(*_LIMITED),
                },
            }
        },
        "/": {
            "get": {
                "summary": "The savings dashboard",
                "parameters": _REPORT_PARAMETERS,
                "security": [{}, {"bearer": []}, {"dashboard": []}],
                "responses": {
                    "200": {"description": "HTML", "content": {"text/html": {"schema": {"type": "string"}}}},
                    **_errors(*_LIMITED, "422", "503"),
                    "401": {
                        "description": _ERROR_CODES["401"] + "; a browser (Accept: text/html) gets the login form",
                        "content": {
                            "application/json": {"schema": _ref("Error")},
                            "text/html": {"schema": {"type": "string"}},
                        },
                    },
                },
            }
        },
        "/login": {
            "get": {
                "summary": "The dashboard's login form (keys off: nothing to sign in to, go to /)",
                "security": [],
                "responses": {
                    "200": {"description": "The form", "content": {"text/html": {"schema": {"type": "string"}}}},
                    "303": {"description": "Keys are off: go to /"},
                },
            },
            "post": {
                "summary": "The dashboard's login form: a valid key becomes an HttpOnly, SameSite=Strict cookie",
                "security": [],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/x-www-form-urlencoded": {
                            "schema": {"type": "object", "required": ["key"], "properties": {"key": {"type": "string"}}}
                        }
                    },
                },
                "responses": {
                    "303": {"description": "Signed in (or keys are off): the cookie is set; go to /"},
                    "401": {
                        "description": "That key is not accepted: the form again",
                        "content": {"text/html": {"schema": {"type": "string"}}},
                    },
                    **_errors("408", "413", "422"),
                },
            },
        },
    },
}
