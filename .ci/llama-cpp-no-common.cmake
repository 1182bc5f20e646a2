# Included by llama.cpp's project() (CMAKE_PROJECT_llama.cpp_INCLUDE in .ci/run): llama-cpp-python forces
# LLAMA_BUILD_COMMON=ON in the cache, but its Python package loads only libllama and libggml*, never llama.cpp's
# common library (arg parsing, chat templates, an HTTP client: 52 C++ files, ~60% of the build's CPU time measured
# 2026-11-29). A normal variable shadows the cache entry inside llama.cpp's directory, so neither the library nor its
# install rule is generated.
set(LLAMA_BUILD_COMMON OFF)
