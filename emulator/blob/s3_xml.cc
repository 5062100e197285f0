#include "emulator/blob/s3_xml.h"

#include <expat.h>

namespace sheetlog {

const XmlElement* XmlElement::Child(std::string_view child) const {
  for (const auto& c : children) {
    if (c->name == child) return c.get();
  }
  return nullptr;
}

std::string XmlElement::ChildText(std::string_view child) const {
  const XmlElement* c = Child(child);
  return c == nullptr ? "" : c->text;
}

std::vector<const XmlElement*> XmlElement::Children(std::string_view child) const {
  std::vector<const XmlElement*> out;
  for (const auto& c : children) {
    if (c->name == child) out.push_back(c.get());
  }
  return out;
}

namespace {

struct TreeBuilder {
  std::unique_ptr<XmlElement> root;
  std::vector<XmlElement*> open;

  static void Start(void* data, const XML_Char* name, const XML_Char** /*attributes*/) {
    auto* self = static_cast<TreeBuilder*>(data);
    auto element = std::make_unique<XmlElement>();
    std::string_view local(name);
    // With namespace processing expat joins "URI" and the local name with '|'.
    if (size_t bar = local.rfind('|'); bar != std::string_view::npos) {
      local.remove_prefix(bar + 1);
    }
    element->name = std::string(local);
    XmlElement* raw = element.get();
    if (self->open.empty()) {
      self->root = std::move(element);
    } else {
      self->open.back()->children.push_back(std::move(element));
    }
    self->open.push_back(raw);
  }

  static void End(void* data, const XML_Char* /*name*/) {
    static_cast<TreeBuilder*>(data)->open.pop_back();
  }

  static void Text(void* data, const XML_Char* text, int length) {
    auto* self = static_cast<TreeBuilder*>(data);
    if (!self->open.empty()) self->open.back()->text.append(text, length);
  }
};

}  // namespace

Result<std::unique_ptr<XmlElement>> ParseXml(std::string_view document) {
  XML_Parser parser = XML_ParserCreateNS(nullptr, '|');
  if (parser == nullptr) return Internal("expat: out of memory");
  TreeBuilder builder;
  XML_SetUserData(parser, &builder);
  XML_SetElementHandler(parser, &TreeBuilder::Start, &TreeBuilder::End);
  XML_SetCharacterDataHandler(parser, &TreeBuilder::Text);
  const bool ok = XML_Parse(parser, document.data(), static_cast<int>(document.size()),
                            /*isFinal=*/1) == XML_STATUS_OK;
  Status status;
  if (!ok) {
    status = InvalidArgument(std::string("malformed XML from the object store: ") +
                             XML_ErrorString(XML_GetErrorCode(parser)) + " at line " +
                             std::to_string(XML_GetCurrentLineNumber(parser)));
  } else if (builder.root == nullptr) {
    status = InvalidArgument("malformed XML from the object store: no element");
  }
  XML_ParserFree(parser);
  if (!status.ok()) return status;
  return std::move(builder.root);
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

}  // namespace sheetlog
