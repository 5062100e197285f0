// sheetlog: the command line. `sheetlog serve` runs the server.
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  std::string command = argc > 1 ? argv[1] : "";
  std::fprintf(stderr, "sheetlog: command '%s' not implemented yet\n", command.c_str());
  return 2;
}
