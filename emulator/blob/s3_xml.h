// The XML of S3's responses (ListObjectsV2, errors, tagging, multipart uploads), read
// with expat into a small element tree. S3's documents are small (a listing page is at
// most 1000 keys), so a tree is simpler than a streaming handler and costs little.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/status.h"

namespace sheetlog {

struct XmlElement {
  std::string name;  // local name: a namespace prefix or URI is dropped
  std::string text;  // character data directly inside this element
  std::vector<std::unique_ptr<XmlElement>> children;

  // The first child named `child`, or null.
  const XmlElement* Child(std::string_view child) const;
  // The text of the first child named `child`, or "" if there is none.
  std::string ChildText(std::string_view child) const;
  // Every child named `child`, in document order.
  std::vector<const XmlElement*> Children(std::string_view child) const;
};

// Parses a whole document. InvalidArgument naming expat's error and line if it is not
// well-formed.
Result<std::unique_ptr<XmlElement>> ParseXml(std::string_view document);

// `text` with &, <, >, " and ' escaped, for building request bodies.
std::string XmlEscape(std::string_view text);

}  // namespace sheetlog
