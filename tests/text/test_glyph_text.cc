// hv15::extract_glyph_text on fresh prompts: the quoting rules of the pipeline's regex.
#include <gtest/gtest.h>

#include "dattn/core/error.h"
#include "dattn/text/hv15_prompt.h"

using namespace dattn;

namespace {

std::string glyph(std::string_view p) { return hv15::extract_glyph_text(p).value_or("<none>"); }

TEST(GlyphText, NoQuotedTextIsNone) {
  EXPECT_FALSE(hv15::extract_glyph_text("a cat").has_value());
  EXPECT_FALSE(hv15::extract_glyph_text("").has_value());
  EXPECT_FALSE(hv15::extract_glyph_text("an \"unclosed quote").has_value());
  EXPECT_FALSE(hv15::extract_glyph_text("\u201Cunclosed curly").has_value());
  EXPECT_FALSE(hv15::extract_glyph_text("\"across\na line\"").has_value());  // . does not match a newline
}

TEST(GlyphText, FormatsEveryQuoteInOrder) {
  EXPECT_EQ(glyph("say \"hi\""), "Text \"hi\". ");
  EXPECT_EQ(glyph("\u201C\u4F60\u597D\u201D and \"B\""), "Text \"\u4F60\u597D\". Text \"B\". ");
  EXPECT_EQ(glyph("\"\""), "Text \"\". ");  // an empty quote is a glyph text too
  // The shortest match: "a" "b" are two quotes, not one.
  EXPECT_EQ(glyph("\"a\" \"b\""), "Text \"a\". Text \"b\". ");
  // Whichever quote opens first holds the other kind inside it (as Python's re.findall gives).
  EXPECT_EQ(glyph("\u201Cx \"y\" z\u201D"), "Text \"x \"y\" z\". ");
  EXPECT_EQ(glyph("\"x \u201Cy\u201D\""), "Text \"x \u201Cy\u201D\". ");
  // A quote that cannot close on its line is skipped, and the next one starts the match.
  EXPECT_EQ(glyph("say \"a\nb\" and \"c"), "Text \" and \". ");
}

TEST(GlyphText, DuplicatesDroppedKeepingTheFirst) {
  EXPECT_EQ(glyph("\"B\" \"A\" \"B\" \"A\""), "Text \"B\". Text \"A\". ");
  EXPECT_EQ(glyph("\"A\" \u201CA\u201D"), "Text \"A\". ");
}

TEST(GlyphText, LongPromptsOfUnclosedOrManyQuotes) {
  // Each unclosed opening searched the rest of the prompt, and each quote was compared with all kept
  // before it: both O(n^2) on a long prompt. Results only here; the work is linear now.
  std::string curly;
  while (curly.size() < 120000) curly += "\u201C";
  EXPECT_FALSE(hv15::extract_glyph_text(curly).has_value());
  EXPECT_FALSE(hv15::extract_glyph_text(curly + "\n\u201D").has_value());
  EXPECT_EQ(glyph(curly + "\u201D"), "Text \"" + curly.substr(3) + "\". ");  // the first opens, the rest are text
  std::string many, want;
  for (int i = 0; i < 20000; ++i) {
    many.append("\"").append(std::to_string(i % 10000)).append("\"");
    if (i < 10000) want += (i ? ". Text \"" : "Text \"") + std::to_string(i) + "\"";
  }
  EXPECT_EQ(glyph(many), want + ". ");
  // Openings on one line and closings after a newline: none matches, and the line's quotes pair up.
  EXPECT_EQ(glyph("\u201Ca \u201Cb\n\u201D \"c\n\" \"d\""), "Text \" \". ");
}

TEST(GlyphText, NonUtf8IsRefused) { EXPECT_THROW(hv15::extract_glyph_text("\"\xff\""), UserError); }

}  // namespace
