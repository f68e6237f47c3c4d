// chat_page.hpp: the chat page GET / serves: one HTML file with its
// JavaScript inline, no build step. It streams the assistant's answer from
// /v1/chat/completions as the tokens arrive.
#pragma once

#include <string_view>

namespace tessera::server {

std::string_view chat_page_html();

}  // namespace tessera::server
