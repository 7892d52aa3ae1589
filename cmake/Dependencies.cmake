# Third-party libraries, all from Debian packages (see scripts/install-deps.sh).
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(OpenMP REQUIRED)
find_package(Threads REQUIRED)
if(DATTN_TESTS)
  find_package(GTest REQUIRED)
endif()
