package rknn

// fusionRules are the rknn-toolkit2 rewrites that would merge the tiles
// (and the attention pattern) back together, as the SHARD build script
// disables them (../shared/docs/rknn.md §2).
var fusionRules = []string{
	"fuse_matmul_softmax_matmul_to_sdpa", "fuse_transpose_reshape", "fuse_channel_shuffle_split_concat_to_gather",
	"squeeze_nd_add", "squeeze_to_4d_add", "eliminate_add_redundancy_const_dim",
	"fuse_exmatmul_mul", "convert_softmax_to_exsoftmax13",
}

// ShardOps are the operators shards contain (after folding, scaling and
// tiling a torch.onnx ViT encoder): all in rknn-toolkit2's ONNX operator
// list. docs/rknn.md lists them.
var ShardOps = []string{"Add", "Concat", "Div", "Erf", "MatMul", "Mul", "Pow", "ReduceMean", "Reshape", "Sigmoid", "Slice",
	"Softmax", "Sqrt", "Sub", "Transpose"}
