// STUB: replaced by the driver.
#include <cstdio>
int main() { std::puts("onnxc: not yet"); return 1; }
