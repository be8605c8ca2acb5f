-- Only `vim.lsp.enable('kernel_lsp')`: the plugin on the runtimepath and
-- `kernel-lsp` on PATH, no setup() call and no other configuration.
local H = ... -- tests/helpers.lua, passed by its run()

vim.lsp.enable('kernel_lsp')
local dir = H.tmpdir()

H.test('vim.lsp.enable alone attaches to a Triton file and reports KL005', function()
  local path = H.copy('examples/tanh_activation/candidate_tl_tanh.py', dir)
  local buf = H.open(path)
  local client = H.client(buf)
  H.eq({ 'kernel-lsp', 'serve' }, client.config.cmd, 'default cmd')
  H.eq(dir, client.root_dir, 'root_dir: the file directory when no root marker exists')
  local d = H.wait_code(buf, 'KL005')
  H.eq(H.line_of(buf, '    out = tl.tanh(acc)'), d.lnum, 'KL005 line')
  H.contains(d.message, 'tanh')
end)

H.test('a Python file that does not mention triton gets no client', function()
  local path = dir .. '/plain.py'
  vim.fn.writefile({ 'import torch', '', 'def f(x):', '    return x + 1' }, path)
  local buf = H.open(path)
  H.eq('python', vim.bo[buf].filetype, 'filetype')
  vim.wait(1500)
  H.eq(0, #vim.lsp.get_clients({ bufnr = buf, name = 'kernel_lsp' }), 'clients on plain.py')
end)

H.test('a root marker decides the workspace root', function()
  local proj = H.tmpdir()
  vim.fn.mkdir(proj .. '/kernels', 'p')
  vim.fn.writefile({ 'ignore = ["KL005"]' }, proj .. '/kernel-lsp.toml')
  local path = H.copy('examples/tanh_activation/candidate_tl_tanh.py', proj .. '/kernels')
  local buf = H.open(path)
  local client = H.client(buf)
  H.eq(proj, client.root_dir, 'root_dir')
  -- The project's kernel-lsp.toml ignores KL005: give the server time to publish.
  vim.wait(2000, function() return #vim.diagnostic.get(buf) > 0 end)
  H.ok(not H.diagnostic(buf, 'KL005'), 'KL005 ignored by the project file, got ' .. table.concat(H.codes(buf), ','))
end)

H.test('vim.lsp.config overrides cmd', function()
  vim.lsp.config('kernel_lsp', { cmd = { vim.env.KERNEL_LSP_BIN, 'serve' } })
  local d2 = H.tmpdir()
  local path = H.copy('examples/gru/gru_python_loop.py', d2)
  local buf = H.open(path)
  local client = H.client(buf)
  H.eq({ vim.env.KERNEL_LSP_BIN, 'serve' }, client.config.cmd, 'cmd')
  H.wait_code(buf, 'KL001')
end)
