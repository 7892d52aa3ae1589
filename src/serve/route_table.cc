#include "serve/route_table.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace dattn::serve {

void RouteTable::add(httplib::Server& http, const std::string& method, const std::string& pattern,
                     httplib::Server::Handler handler) {
  if (method == "GET") http.Get(pattern, std::move(handler));
  else if (method == "POST") http.Post(pattern, std::move(handler));
  else if (method == "DELETE") http.Delete(pattern, std::move(handler));
  else throw std::logic_error("RouteTable: no httplib registration for method " + method);
  entries_.push_back({method, std::regex(pattern)});
}

std::string RouteTable::methods_for(const std::string& path) const {
  std::vector<std::string> methods;
  const auto append = [&](const std::string& m) {
    if (std::find(methods.begin(), methods.end(), m) == methods.end()) methods.push_back(m);
  };
  for (const Entry& e : entries_) {
    if (!std::regex_match(path, e.path)) continue;
    append(e.method);
    if (e.method == "GET") append("HEAD");
  }
  std::string text;
  for (const std::string& m : methods) text += (text.empty() ? "" : ", ") + m;
  return text;
}

}  // namespace dattn::serve
