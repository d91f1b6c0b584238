"""onnxc's chat-template interpreter (text/chat, through the C API as onnxc.ChatTemplate) against
jinja2 3.1.6 configured as transformers 4.40's apply_chat_template configures it: the real chat
templates of several model families (templates/, see templates/SOURCES.md) rendered with the same
messages must give byte-identical text, and a template that fails in jinja2 (raise_exception or
otherwise) must fail in onnxc too, with the template's own message for raise_exception."""

import functools
import json
import os
import subprocess

import jinja2
import pytest
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

import onnxc

assert jinja2.__version__ == "3.1.6", f"the reference is jinja2 3.1.6, found {jinja2.__version__}"

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> the special tokens its tokenizer_config.json puts in the context.
TEMPLATES = {
    "llama2": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
    "llama3": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "llama3.1": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "mistral-v0.1": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
    "mistral-v3-tools": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
    "mistral-nemo": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
    "qwen2": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    "qwen2.5": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    "phi3.5": {"bos_token": "<s>", "eos_token": "<|endoftext|>", "unk_token": "<unk>"},
    "gemma2": {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>"},
    "chatml": {"bos_token": "<s>", "eos_token": "<|im_end|>"},
    "zephyr": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
}

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Température d'une ville <b>&</b> ☀",
    "parameters": {"type": "object", "required": ["city"], "properties": {
        "city": {"type": "string", "description": "The city"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}}}}]
TOOL_CALL = {"id": "abc123def", "type": "function",
             "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}

CONVERSATIONS = {
    "system-user": [SYSTEM, {"role": "user", "content": "Hello!"}],
    "user-only": [{"role": "user", "content": "  What is 2 + 2?  "}],
    "multi-turn": [SYSTEM, {"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there"},
                   {"role": "user", "content": "Who are you"},
                   {"role": "assistant", "content": "   I am an assistant   "},
                   {"role": "user", "content": "Another question"}],
    "assistant-last": [{"role": "user", "content": "Say hi"}, {"role": "assistant", "content": "Hi!"}],
    "unicode": [{"role": "user", "content": "héllo 世界 🍕 ‘quotes’ <b>&amp; \"x\" 'y'"},
                {"role": "assistant", "content": "مرحبا\n\tكيف حالك"},
                {"role": "user", "content": "emoji 🎉 and a \\ backslash\r\nnew line"}],
    "not-alternating": [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}],
    "empty": [],
    "tool-call": [SYSTEM, {"role": "user", "content": "Weather in Paris?"},
                  {"role": "assistant", "tool_calls": [TOOL_CALL]},
                  {"role": "tool", "tool_call_id": "abc123def", "name": "get_weather", "content": "22"},
                  {"role": "assistant", "content": "It is 22 degrees."},
                  {"role": "user", "content": "Thanks"}],
}

# Extra variables of some renders: tools as transformers passes them (apply_chat_template(tools=...)
# in later versions, a keyword argument in 4.40), Llama 3.1's builtin tools and date.
VARIANTS = [
    {},
    {"tools": TOOLS},
    {"tools": TOOLS, "builtin_tools": ["get_weather", "wolfram_alpha"], "date_string": "1 Jan 2025"},
]


def reference_environment():
    """transformers 4.40's PreTrainedTokenizerBase._compile_jinja_template, environment for environment."""
    def raise_exception(message):
        raise TemplateError(message)
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    return env


ENV = reference_environment()


@functools.lru_cache(maxsize=None)
def compiled(source):
    return ENV.from_string(source)  # compiling is most of jinja2's time: once per template


def reference(source, messages, add_generation_prompt, context):
    """("ok", text) or ("raise", message) or ("error", description) from jinja2."""
    try:
        template = compiled(source)
        return "ok", template.render(messages=messages, add_generation_prompt=add_generation_prompt, **context)
    except TemplateError as e:
        kind = "raise" if type(e) is TemplateError else "error"
        return kind, str(e)
    except Exception as e:  # noqa: BLE001 - a TypeError inside the template is an error too
        return "error", f"{type(e).__name__}: {e}"


def ours(chat, messages, add_generation_prompt, variables):
    try:
        return "ok", chat.apply(messages, add_generation_prompt=add_generation_prompt, **variables)
    except onnxc.Error as e:
        return "error", str(e)


def read_template(name):
    with open(os.path.join(HERE, "templates", name + ".jinja"), encoding="utf-8", newline="") as f:
        return f.read()


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_family_matches_jinja2(name):
    source = read_template(name)
    chat = onnxc.ChatTemplate.from_str(source, **TEMPLATES[name])
    compared = 0
    for conversation, messages in CONVERSATIONS.items():
        for variables in VARIANTS:
            for add_generation_prompt in (True, False):
                context = {**TEMPLATES[name], **variables}
                expected = reference(source, messages, add_generation_prompt, context)
                got = ours(chat, messages, add_generation_prompt, variables)
                where = f"{name} / {conversation} / {sorted(variables)} / agp={add_generation_prompt}"
                if expected[0] == "ok":
                    assert got == expected, where
                else:
                    assert got[0] == "error", f"{where}: jinja2 failed ({expected[1]}), onnxc rendered {got[1]!r}"
                    assert got[1].startswith("chat template line "), where
                    if expected[0] == "raise":
                        assert got[1].endswith("raise_exception: " + expected[1]), where
                compared += 1
    assert compared == len(CONVERSATIONS) * len(VARIANTS) * 2


def test_raise_exception_paths():
    """LLaMA-2 and Mistral refuse roles that do not alternate, with their own message and its line."""
    for name in ("llama2", "mistral-v0.1"):
        chat = onnxc.ChatTemplate.from_str(read_template(name), **TEMPLATES[name])
        with pytest.raises(onnxc.Error, match=r"^chat template line 1: raise_exception: Conversation roles "
                                              r"must alternate user/assistant/user/assistant/\.\.\.$"):
            chat.apply(CONVERSATIONS["not-alternating"])
    mistral = onnxc.ChatTemplate.from_str(read_template("mistral-v0.1"), **TEMPLATES["mistral-v0.1"])
    with pytest.raises(onnxc.Error, match="raise_exception: Only user and assistant roles are supported!"):
        mistral.apply([{"role": "user", "content": "a"}, {"role": "system", "content": "b"}])


def test_model_folder_loading(tmp_path):
    """tokenizer_config.json's chat_template (a string, or a list with "default"), its special tokens
    (strings or AddedToken objects), and chat_template.jinja, which comes first."""
    source = read_template("llama2")
    config = {"bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": False},
              "eos_token": "</s>", "pad_token": None, "chat_template": source}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    messages = CONVERSATIONS["multi-turn"]
    expected = reference(source, messages, True, {"bos_token": "<s>", "eos_token": "</s>"})[1]
    assert onnxc.ChatTemplate(tmp_path).apply(messages) == expected
    assert onnxc.ChatTemplate(tmp_path / "tokenizer_config.json").apply(messages) == expected

    config["chat_template"] = [{"name": "tool_use", "template": "tools"},
                               {"name": "default", "template": "{{ bos_token }}default"}]
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    assert onnxc.ChatTemplate(tmp_path).apply([]) == "<s>default"
    config["chat_template"] = [{"name": "tool_use", "template": "tools"}]
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    with pytest.raises(onnxc.Error, match="no 'default' entry \\(it has: tool_use\\)"):
        onnxc.ChatTemplate(tmp_path)

    (tmp_path / "chat_template.jinja").write_text("{{ eos_token }}jinja file\n")
    assert onnxc.ChatTemplate(tmp_path).apply([]) == "</s>jinja file"
    with pytest.raises(onnxc.Error, match="no such file or folder"):
        onnxc.ChatTemplate(tmp_path / "missing")


def test_refusals_name_the_construct_and_line():
    cases = {
        "a\n\n{% include 'x.jinja' %}": "chat template line 3: unsupported tag 'include'",
        "{{ x | wordwrap }}": "chat template line 1: unknown filter 'wordwrap'",
        "{% for x in y %}": "chat template line 1: missing '{% endfor %}'",
        "\n{{ 1 + }}": "chat template line 2: unexpected '}}'",
    }
    for source, message in cases.items():
        with pytest.raises(onnxc.Error) as error:
            onnxc.ChatTemplate.from_str(source)
        assert str(error.value) == message


def test_cli_prints_the_prompt(tmp_path):
    """onnxc tokenize FOLDER --chat MESSAGES.json --print-chat prints what apply() returns."""
    cli = os.environ.get("ONNXC")
    if not cli:
        pytest.skip("ONNXC is not set (ctest sets it to the onnxc tool)")
    (tmp_path / "chat_template.jinja").write_text(read_template("zephyr"), encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(TEMPLATES["zephyr"]))
    messages = CONVERSATIONS["unicode"]
    (tmp_path / "messages.json").write_text(json.dumps(messages), encoding="utf-8")
    run = subprocess.run([cli, "tokenize", str(tmp_path), "--chat", str(tmp_path / "messages.json"),
                          "--print-chat", "--add-generation-prompt", "false"], capture_output=True)
    assert run.returncode == 0, run.stderr
    expected = reference(read_template("zephyr"), messages, False, TEMPLATES["zephyr"])
    assert ("ok", run.stdout.decode("utf-8")) == expected
    bad = subprocess.run([cli, "tokenize", str(tmp_path), "--chat", str(tmp_path / "missing.json"),
                          "--print-chat"], capture_output=True, text=True)
    assert bad.returncode != 0 and bad.stderr.strip().endswith("missing.json: cannot open the file")
