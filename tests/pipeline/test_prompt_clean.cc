// Prompt cleaning against Python: every expected value below is what CPython 3.11's html.unescape and
// diffusers' prompt_clean (without ftfy) return for the input.
#include <gtest/gtest.h>

#include "dattn/core/error.h"
#include "dattn/text/prompt_clean.h"

using namespace dattn;

namespace {

struct Case {
  const char* input;
  const char* unescaped;  // html.unescape once
  const char* cleaned;    // prompt_clean
};

const Case kCases[] = {
    {"&amp;amp;", "&amp;", "&"},
    {"A &lt;b&gt; &quot;q&quot; &#39;s&#x27; &apos;", "A <b> \"q\" 's' '", "A <b> \"q\" 's' '"},
    // Legacy names without ';' and the longest-prefix rule.
    {"&ampfoo &amp &AMP; &notit; &not;x", "&foo & & \u00acit; \u00acx", "&foo & & \u00acit; \u00acx"},
    {"&#65;&#x42;&#X43;&#0068 &#x45", "ABCD E", "ABCD E"},
    // NUL, windows-1252 remapping, surrogates, out of range, huge numbers.
    {"&#0;&#128;&#x9F;&#xD800;&#x110000;&#99999999999999999999;", "\uFFFD\u20AC\u0178\uFFFD\uFFFD\uFFFD",
     "\uFFFD\u20AC\u0178\uFFFD\uFFFD\uFFFD"},
    // Dropped code points; CR stays (then is whitespace).
    {"&#1;&#x0B;&#xFFFE;&#x10FFFF;&#xFDD0;&#13;", "\r", ""},
    {"&#;&#x;&#xg;& ;&;&&amp;", "&#;&#x;&#xg;& ;&;&&", "&#;&#x;&#xg;& ;&;&&"},
    {"caf&eacute; na&iuml;ve &mdash; &hellip; &euro;&trade;", "caf\u00e9 na\u00efve \u2014 \u2026 \u20ac\u2122",
     "caf\u00e9 na\u00efve \u2014 \u2026 \u20ac\u2122"},
    {"&lang;x&rang; &Alpha;&omega;&sigmaf;", "\u27e8x\u27e9 \u0391\u03c9\u03c2", "\u27e8x\u27e9 \u0391\u03c9\u03c2"},
    // A name longer than 32 characters is not a reference.
    {"&aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa;", "&aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa;",
     "&aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa;"},
    // Every kind of whitespace Python's \s knows folds to one space.
    {"&nbsp;a\u00a0b\u3000c\u2028d\x1c" "e\u0085" "f\x0bg", "\u00a0a\u00a0b\u3000c\u2028d\x1c" "e\u0085" "f\x0bg",
     "a b c d e f g"},
    {"\t\n  lead  and trail \r\n", "\t\n  lead  and trail \r\n", "lead and trail"},
    {"&amp;nbsp;x", "&nbsp;x", "x"},  // the second unescape
    {"&Eacute;mile&#x2019;s", "\u00c9mile\u2019s", "\u00c9mile\u2019s"},
    {"&frac12x &sup2 &copy2024", "\u00bdx \u00b2 \u00a92024", "\u00bdx \u00b2 \u00a92024"},
    {"&amp\u00e9 &#x1F680;", "&\u00e9 \U0001F680", "&\u00e9 \U0001F680"},
    {"  A   dog &amp; a cat\n\tplaying   ", "  A   dog & a cat\n\tplaying   ", "A dog & a cat playing"},
    {"", "", ""},
};

TEST(PromptClean, MatchesPythonHtmlUnescapeAndPromptClean) {
  for (const Case& c : kCases) {
    EXPECT_EQ(html_unescape(c.input), c.unescaped) << "html_unescape(\"" << c.input << "\")";
    EXPECT_EQ(clean_prompt(c.input), c.cleaned) << "clean_prompt(\"" << c.input << "\")";
  }
}

TEST(PromptClean, InvalidUtf8IsAUserError) {
  try {
    clean_prompt("ok \xC3\x28 bad");
    FAIL() << "invalid UTF-8 must throw";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("not valid UTF-8 at byte 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(html_unescape("&amp; \xED\xA0\x80"), UserError);  // an encoded surrogate
  EXPECT_THROW(clean_prompt("\xC0\xAF"), UserError);             // overlong
}

}  // namespace
