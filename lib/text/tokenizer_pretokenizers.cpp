// The regexes are those of the models' tokenizer.json files, as llama.cpp
// lists them in llm_tokenizer_bpe (llama-vocab.cpp). Where llama.cpp had to
// rewrite a pattern for std::regex (case-insensitive groups, \p{Lu}-style
// classes, possessive quantifiers), the original is used here: PCRE2 runs it
// as the Hugging Face tokenizers do.
//
// Characters outside ASCII are written as \x{...}, so that no editor's
// Unicode normalisation can move a range bound (deepseek-llm's letter class
// holds U+2126 OHM SIGN and U+212A KELVIN SIGN, which NFC turns into other
// letters).
//
// A vocabulary without tokenizer.ggml.pre gets llama.cpp's "default"
// sequence (punctuation runs, then GPT-2's regex, then digit runs, then
// three-digit groups); llama.cpp warns that such files tokenize poorly and
// should be reconverted, and so do we, in the documentation.
#include "text/tokenizer_pretokenizers.hpp"

namespace attendre::tokenizer {
namespace {

// GPT-2's regex without its final \s+: the splitter keeps unmatched gaps
// as pieces, which gives the same words.
constexpr std::string_view kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr std::string_view kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kBloom = R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)";
constexpr std::string_view kCjk = R"([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";

constexpr std::string_view kDefault[] = {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", R"([0-9][0-9][0-9])"};
constexpr std::string_view kGpt2Only[] = {kGpt2};
constexpr std::string_view kLlama3Only[] = {kLlama3};
constexpr std::string_view kQwen2Only[] = {kQwen2};
constexpr std::string_view kGpt4oOnly[] = {kGpt4o};
constexpr std::string_view kDeepseekLlm[] = {
    "[\r\n]",
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)",
    R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)",
    R"(\s+$)",
    kCjk,
    R"(\p{N}+)",
};
constexpr std::string_view kDeepseekCoder[] = {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjk, R"(\p{N})"};
constexpr std::string_view kDeepseekV3[] = {
    R"(\p{N}{1,3})",
    R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)",
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
};
constexpr std::string_view kFalcon[] = {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, R"([0-9][0-9][0-9])"};
constexpr std::string_view kStarcoder[] = {R"(\p{N})", kGpt2};
constexpr std::string_view kQwen35[] = {
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
constexpr std::string_view kBloomOnly[] = {kBloom};
constexpr std::string_view kViking[] = {kBloom, R"(\p{N})"};
constexpr std::string_view kTekken[] = {
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)"
    R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
constexpr std::string_view kTinyAya[] = {R"(\d{1,3}(?=(?:\d{3})*\b))", kGpt4o};
constexpr std::string_view kSeedCoder[] = {
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"};
constexpr std::string_view kBailingMoe[] = {
    R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)"};
constexpr std::string_view kUfakzeka[] = {
    R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
constexpr std::string_view kMiniCpm5[] = {
    R"(\p{N}{1,3})",
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
constexpr std::string_view kLaguna[] = {R"([^\n]+|[\n]+)", kQwen2};
constexpr std::string_view kExaoneMoe[] = {
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)"};
constexpr std::string_view kJais2[] = {
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+)"
    R"(|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})"};
constexpr std::string_view kYoutu[] = {
    R"([\x{AC00}-\x{D7A3}\x{3131}-\x{318E}]+|[\x{FF01}\x{2026}\x{201C}\x{201D}\x{2018}\x{2019}\x{2014}\x{FF1A}\x{FF1B}\x{FF0C}\x{3001}-\x{303F}\x{FE30}-\x{FE4F}]+|[\x{3105}-\x{312F}]+|[\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)",
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};

// {names, regexes, ignore_merges, add_bos, clean_spaces}, as llama.cpp's
// llama_vocab::impl::load sets them per name.
constexpr PreTokenizerSpec kSpecs[] = {
    {"default", kDefault},
    {"llama3 llama-v3 llama-bpe falcon3 falcon-h1 pixtral midm-2.0 lfm2 jina-v5-nano", kLlama3Only, true, true},
    {"dbrx smaug-bpe", kLlama3Only},
    {"deepseek-llm", kDeepseekLlm, false, false, false},
    {"deepseek-coder", kDeepseekCoder, false, false, false},
    {"deepseek-v3 hunyuan-dense joyai-llm hy_v4", kDeepseekV3, false, false, false},
    {"falcon", kFalcon},
    {"starcoder refact codeshell exaone minerva-7b mellum2", kStarcoder},
    {"command-r smollm", kStarcoder, false, false, false},
    {"gpt-2 phi-2 jina-es jina-de gigachat jina-v2-es jina-v2-de a.x-4.0 mellum modern-bert exaone4 mpt olmo jais",
     kGpt2Only},
    {"trillion granite-docling", kGpt2Only, false, false, false},
    {"stablelm2 megrez", kQwen2Only},
    {"qwen2 deepseek-r1-qwen kormo f2llmv2 hunyuan solar-open grok-2", kQwen2Only, false, false, false},
    {"qwen35", kQwen35, false, false, false},
    {"bloom gpt3-finnish", kBloomOnly},
    {"poro-chat", kBloomOnly, false, false, false},
    {"viking", kViking, false, false, false},
    {"tekken", kTekken, true, true, false},
    {"gpt-4o llama4 kanana2 talkie minimax-m2", kGpt4oOnly, false, false, false},
    {"tiny_aya cohere2moe", kTinyAya, false, false, false},
    {"seed-coder", kSeedCoder, false, false, false},
    {"bailingmoe bailingmoe2 llada-moe", kBailingMoe, false, false, false},
    {"ufakzeka", kUfakzeka, false, false, false},
    {"minicpm5", kMiniCpm5, true},
    {"laguna", kLaguna, false, false, false},
    {"exaone-moe", kExaoneMoe},
    {"jais-2", kJais2},
    {"youtu", kYoutu, true, false, false},
};

bool names_contain(std::string_view names, std::string_view name) {
  while (!names.empty()) {
    const size_t space = names.find(' ');
    if (names.substr(0, space) == name) return true;
    if (space == std::string_view::npos) break;
    names.remove_prefix(space + 1);
  }
  return false;
}

}  // namespace

const PreTokenizerSpec* find_pre_tokenizer(std::string_view name) {
  if (name.empty()) name = "default";
  for (const PreTokenizerSpec& spec : kSpecs)
    if (names_contain(spec.names, name)) return &spec;
  return nullptr;
}

std::string supported_pre_tokenizers() {
  std::string all;
  for (const PreTokenizerSpec& spec : kSpecs) {
    for (const char c : spec.names) all += c == ' ' ? std::string(", ") : std::string(1, c);
    if (&spec != &std::end(kSpecs)[-1]) all += ", ";
  }
  return all;
}

}  // namespace attendre::tokenizer
