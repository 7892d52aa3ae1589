# The layer rule: a layer's sources (src/<layer>) and headers (include/dattn/<layer>) include only their
# own layer and layers below it, never one above it or beside it. The order, bottom to top; layers on
# one level are independent of each other:
#   core | io, text, parallel | attention, ops | models | pipeline | serve  (tools/ sits on top and may use them all)
# Inside attention, the backends (src/attention/backends/<name>/) are independent of each other: what more
# than one runs lives in src/attention/kernels/, which includes no backend.
# Checked at configure time (CMakeLists.txt) and by the ctest test layer_includes, which runs
#   cmake -DDATTN_LAYER_ROOT=<source dir> -P cmake/CheckLayers.cmake
if(CMAKE_SCRIPT_MODE_FILE)
  cmake_minimum_required(VERSION 3.25)  # script mode: the policies of a 3.25 project (IN_LIST)
endif()
set(DATTN_LAYER_LEVELS "core" "io,text,parallel" "attention,ops" "models" "pipeline" "serve")

# Sets <out_level> to the level (0 = bottom) of `layer`, or -1 when it is none.
function(dattn_layer_level layer out_level)
  set(_level 0)
  foreach(_names IN LISTS DATTN_LAYER_LEVELS)
    string(REPLACE "," ";" _names "${_names}")
    if(layer IN_LIST _names)
      set(${out_level} ${_level} PARENT_SCOPE)
      return()
    endif()
    math(EXPR _level "${_level} + 1")
  endforeach()
  set(${out_level} -1 PARENT_SCOPE)
endfunction()

# Fails (FATAL_ERROR) listing every include of `root` that breaks the rule, and every folder of
# root/src that is no layer (its files would belong to no library).
function(dattn_check_layers root)
  set(_errors "")
  file(GLOB _entries LIST_DIRECTORIES true RELATIVE "${root}/src" "${root}/src/*")
  foreach(_entry IN LISTS _entries)
    dattn_layer_level("${_entry}" _level)
    if(_level EQUAL -1)
      string(APPEND _errors "\n  src/${_entry}: not a layer; expected one of core, io, text, parallel, attention, "
                            "ops, models, pipeline, serve (cmake/CheckLayers.cmake)")
    endif()
  endforeach()
  foreach(_names IN LISTS DATTN_LAYER_LEVELS)
    string(REPLACE "," ";" _names "${_names}")
    foreach(_layer IN LISTS _names)
      dattn_layer_level("${_layer}" _own)
      file(GLOB_RECURSE _files RELATIVE "${root}"
           "${root}/src/${_layer}/*.h" "${root}/src/${_layer}/*.cc" "${root}/src/${_layer}/*.cu"
           "${root}/src/${_layer}/*.cuh" "${root}/include/dattn/${_layer}/*.h")
      foreach(_file IN LISTS _files)
        file(STRINGS "${root}/${_file}" _lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
        foreach(_line IN LISTS _lines)
          if(NOT _line MATCHES "\"(dattn/)?([a-z_0-9]+)/[^\"]*\"")
            continue()
          endif()
          set(_included "${CMAKE_MATCH_0}")
          set(_target "${CMAKE_MATCH_2}")
          dattn_layer_level("${_target}" _other)
          if(_other EQUAL -1 OR _target STREQUAL _layer OR _other LESS _own)
            continue()
          endif()
          if(_other EQUAL _own)
            set(_where "beside it")
          else()
            set(_where "above it")
          endif()
          string(APPEND _errors "\n  ${_file}: #include ${_included}: layer ${_layer} includes layer "
                                "${_target}, which is ${_where}")
        endforeach()
      endforeach()
    endforeach()
  endforeach()
  dattn_check_backends("${root}" _backend_errors)
  string(APPEND _errors "${_backend_errors}")
  if(_errors)
    message(FATAL_ERROR "dattn: the layer rule is broken (a layer includes only itself and the layers "
                        "below it: core | io, text, parallel | attention, ops | models | pipeline | serve):${_errors}")
  endif()
endfunction()

# Sets <out_errors> to the includes of one backend's folder by another, and of a backend by kernels/.
function(dattn_check_backends root out_errors)
  set(_errors "")
  file(GLOB_RECURSE _files RELATIVE "${root}" "${root}/src/attention/backends/*" "${root}/src/attention/kernels/*")
  foreach(_file IN LISTS _files)
    if(NOT _file MATCHES "^src/attention/(backends/([^/]+)/|kernels/)")
      continue()  # backends/*.h: the interface every backend shares
    endif()
    set(_own "${CMAKE_MATCH_2}")  # empty in kernels/
    file(STRINGS "${root}/${_file}" _lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"attention/backends/[^/\"]+/")
    foreach(_line IN LISTS _lines)
      string(REGEX MATCH "\"attention/backends/([^/\"]+)/[^\"]*\"" _included "${_line}")
      if(CMAKE_MATCH_1 STREQUAL _own)
        continue()
      endif()
      if(_own)
        string(APPEND _errors "\n  ${_file}: #include ${_included}: backend ${_own} includes backend "
                              "${CMAKE_MATCH_1}'s folder; move what they share to src/attention/kernels/")
      else()
        string(APPEND _errors "\n  ${_file}: #include ${_included}: src/attention/kernels/ includes a backend")
      endif()
    endforeach()
  endforeach()
  set(${out_errors} "${_errors}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND DEFINED DATTN_LAYER_ROOT)
  dattn_check_layers("${DATTN_LAYER_ROOT}")
  message(STATUS "dattn: layer includes of ${DATTN_LAYER_ROOT} follow the layer rule")
endif()
