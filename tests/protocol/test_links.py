"""Pairing codes and links: made and read by one module, whatever a camera or a paste hands in."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.protocol import PairLink, PromptLink, normalize_code, pair_link, parse_link, prompt_link
from app.protocol.pairing import CODE_ALPHABET

codes = st.text(alphabet=CODE_ALPHABET, min_size=8, max_size=8)
hosts = st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z]{2,6})?", fullmatch=True)
urls = st.builds(
    lambda scheme, host, port, path: f"{scheme}://{host}:{port}{path}",
    st.sampled_from(["http", "https"]),
    hosts,
    st.integers(1, 65535),
    st.sampled_from(["", "/ask", "/a/b"]),
)


@given(urls, codes)
def test_a_pair_link_reads_back_as_made(url, code):
    link = parse_link(pair_link(url, code))
    assert link == PairLink(url, normalize_code(code))
    web_route = pair_link(url, code).replace("askuser://", "/")
    assert parse_link(web_route) == link  # the web app's page route
    assert parse_link("/" + pair_link(url, code).split("pair", 1)[1]) == link  # host dropped


@given(st.text(alphabet=CODE_ALPHABET + "-iloIL o", max_size=12))
def test_normalizing_a_code_is_idempotent(text):
    once = normalize_code(text)
    assert normalize_code(once) == once


def test_codes_read_off_a_screen_are_one_code():
    for typed in ("k7qf-2m9x", "K7QF 2M9X", "k7qf2m9x", " K7QF-2M9X "):
        assert normalize_code(typed) == "K7QF-2M9X"
    assert normalize_code("1O1L-IIOO") == "1011-1100"  # O reads as 0; I and L as 1


@given(st.from_regex(r"pr_[0-9A-Z]{26}", fullmatch=True))
def test_a_prompt_link_reads_back(prompt_id):
    assert parse_link(prompt_link(prompt_id)) == PromptLink(prompt_id)
    assert parse_link(f"/prompt/{prompt_id}") == PromptLink(prompt_id)
    assert parse_link(f"https://app.example/#/prompt/{prompt_id}") == PromptLink(prompt_id)
    assert parse_link(f"/{prompt_id}") == PromptLink(prompt_id)


@given(st.text(max_size=300))
def test_any_text_is_a_link_or_none_never_an_error(text):
    assert parse_link(text) is None or isinstance(parse_link(text), PairLink | PromptLink)


def test_what_is_not_a_link():
    for text in (
        "",
        "/",
        "askuser://pair?url=ftp://x&code=AAAA-AAAA",
        "askuser://pair?url=http://x:1",
        "askuser://pair?url=http://x:1&code=",
        "/settings",
        "askuser://prompt/",
    ):
        assert parse_link(text) is None, text
