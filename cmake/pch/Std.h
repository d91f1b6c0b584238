// Precompiled for the libraries of plain C++ (cmake/PrecompiledHeaders.cmake): the standard
// headers most of their files include, about a third of such a file's compile time. Not
// <iostream>: its static initializer would then be in every file, not only those that print.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>
