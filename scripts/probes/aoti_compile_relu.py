import sys, torch
path = sys.argv[1]
class M(torch.nn.Module):
    def forward(self, x, y): return torch.relu(x + y)
x = torch.randn(4, 64); y = torch.randn(4, 64)
ep = torch.export.export(M(), (x, y))
p = torch._inductor.aoti_compile_and_package(ep, package_path=path)
print("packaged", p)
