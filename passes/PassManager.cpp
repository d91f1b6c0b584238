// STUB: replaced by the pass manager.
namespace onnxc {}
