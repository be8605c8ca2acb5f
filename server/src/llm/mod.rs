//! OpenAI-compatible client and the rewrite pipeline — see issue 7.
