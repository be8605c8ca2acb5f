-- Hover and signature help in the real Neovim: `K` on tl.load shows its
-- signature, documentation and Triton version; on a kernel its signature
-- with the constexpr marked; signature help inside a launch shows the
-- kernel's parameters with the active one.
local H = ... -- tests/helpers.lua, passed by its run()
local kl = require('kernel_lsp')

kl.setup({ cmd = { H.bin, 'serve' } })
local dir = H.tmpdir()
local path = dir .. '/add.py'
vim.fn.writefile({
  'import triton',
  'import triton.language as tl',
  '',
  '',
  '@triton.jit',
  'def add_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):',
  '    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)',
  '    x = tl.load(x_ptr + offs, mask=offs < n)',
  '    tl.store(out_ptr + offs, x, mask=offs < n)',
  '',
  '',
  'def add(x, out):',
  '    add_kernel[(triton.cdiv(1024, 256),)](x, out, 1024, BLOCK=256)',
}, path)

--- The text of the first float that contains `needle`.
local function float_with(needle)
  return H.wait(10000, function()
    for _, t in ipairs(H.floats()) do
      if t:find(needle, 1, true) then
        return t
      end
    end
  end, 'a float with ' .. needle .. ' (have: ' .. vim.inspect(H.floats()) .. ')')
end

--- The text Neovim highlights as the active parameter in the signature float.
local function active_parameter()
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(w).relative ~= '' then
      local b = vim.api.nvim_win_get_buf(w)
      for _, m in ipairs(vim.api.nvim_buf_get_extmarks(b, -1, 0, -1, { details = true })) do
        if m[4].hl_group == 'LspSignatureActiveParameter' then
          local l = vim.api.nvim_buf_get_lines(b, m[2], m[2] + 1, false)[1]
          return l:sub(m[3] + 1, m[4].end_col)
        end
      end
    end
  end
end

local buf = H.open(path)
H.client(buf)

H.test('hover on tl.load shows its signature, its doc and the Triton version', function()
  vim.api.nvim_win_set_cursor(0, { 8, (vim.fn.getline(8):find('load', 1, true)) })
  vim.lsp.buf.hover()
  local text = float_with('tl.load(')
  H.contains(text, 'tl.load(pointer, mask=None, other=None')
  H.contains(text, 'Return a tensor of data whose values are loaded')
  H.contains(text, 'Triton 3.')
  vim.cmd('fclose!')
end)

H.test('hover on a kernel marks its constexpr and names its launch line', function()
  vim.api.nvim_win_set_cursor(0, { 6, 6 })
  vim.lsp.buf.hover()
  local text = float_with('def add_kernel')
  H.contains(text, 'BLOCK: tl.constexpr')
  H.contains(text, 'launched at line 13')
  vim.cmd('fclose!')
end)

H.test('signature help inside a launch shows the kernel and the active parameter', function()
  local line = vim.fn.getline(13)
  vim.api.nvim_win_set_cursor(0, { 13, line:find('BLOCK=', 1, true) + 5 })
  vim.lsp.buf.signature_help()
  local text = float_with('add_kernel[grid](')
  H.contains(text, 'add_kernel[grid](x_ptr, out_ptr, n, BLOCK: tl.constexpr)')
  H.eq('BLOCK: tl.constexpr', active_parameter(), 'the active parameter')
  vim.cmd('fclose!')
end)

H.test('signature help inside tl.load names the parameter being written', function()
  local line = vim.fn.getline(8)
  vim.api.nvim_win_set_cursor(0, { 8, line:find('mask=', 1, true) + 1 })
  vim.lsp.buf.signature_help()
  local text = float_with('tl.load(pointer')
  H.contains(text, 'Triton 3.')
  H.eq('mask=None', active_parameter(), 'the active parameter')
  vim.cmd('fclose!')
end)
