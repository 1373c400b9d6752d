// Quoting a value for the file it is written into (docs/export.md "Names, paths and ids"): every
// job-derived string (model name, job name, paths, ids, host and image names) that an export writes
// passes through one of these, so that no value can end its quoting and run as code or change keys.
#pragma once

#include <string>

namespace gpuplan {

// One bash word that reads back as `s`: bare when every character is plain ([A-Za-z0-9_./:=+,@%-]),
// else single-quoted ('\'' for a quote), or ANSI-C quoted ($'...') when `s` holds a control character
// or invalid UTF-8, so that the word is printable ASCII on one line. "" is ''.
std::string ShellWord(const std::string& s);
// The text between bash double quotes that reads back as `s`: \ " $ ` escaped. (A control character
// stays as it is: use ShellWord where the value may hold one.)
std::string ShellDoubleQuoted(const std::string& s);
// One comment line: newlines, carriage returns and every other control character become visible
// escapes (\n, \r, \t, \xNN), so that the text cannot end the comment; invalid UTF-8 bytes become \xNN.
std::string CommentLine(const std::string& s);
// A YAML double-quoted scalar, quotes included ("a \"b\"\n"): printable ASCII out, \uXXXX for the rest.
std::string YamlScalar(const std::string& s);
// A TOML basic string, quotes included ("a \"b\"\n"); invalid UTF-8 bytes become U+FFFD.
std::string TomlString(const std::string& s);
// A JSON string, quotes included; invalid UTF-8 bytes become U+FFFD.
std::string JsonString(const std::string& s);
// A Kubernetes object name that is a DNS-1035 label: lower case [a-z0-9-], starting with a letter,
// ending with a letter or digit, at most 63 characters ("gpuplan" when nothing is left).
std::string DnsLabel(const std::string& s);
// Whether `s` is non-empty and made of [A-Za-z0-9_./:=+,@%-] only: a value that a line-based format
// read by word splitting (Megatron-Bridge's override file) can carry without quoting.
bool PlainValue(const std::string& s);

}  // namespace gpuplan
