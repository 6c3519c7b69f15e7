"""A fake model that answers every request: for tests where the model's words do not matter."""

from fake_openai import answer


def answer_anything(llm_server):
    llm_server.then(answer("好的。", prompt=100, completion=5))
    llm_server.repeat_last = True
    return llm_server
