#pragma once
// The server's routes as registered (method and path pattern), so that a known path asked with another
// method is answered 405 with an Allow header instead of httplib's 404 "no such route".
#include <regex>
#include <string>
#include <vector>

#include <httplib.h>

namespace dattn::serve {

class RouteTable {
 public:
  // Registers `handler` with httplib under `method` (GET, POST or DELETE) and remembers the pair.
  void add(httplib::Server& http, const std::string& method, const std::string& pattern,
           httplib::Server::Handler handler);
  // The methods registered for `path` ("GET, DELETE"; HEAD with GET, as httplib answers it), or "" when none.
  std::string methods_for(const std::string& path) const;

 private:
  struct Entry {
    std::string method;
    std::regex path;
  };
  std::vector<Entry> entries_;
};

}  // namespace dattn::serve
