-- Navigation in the real Neovim: go to definition from a launch to its
-- kernel and from `BLOCK=...` to the constexpr parameter, references, and
-- the document's symbols; the block-shape rule's diagnostic (KL011).
local H = ... -- tests/helpers.lua, passed by its run()
local kl = require('kernel_lsp')

kl.setup({ cmd = { H.bin, 'serve' }, python = H.python })
local dir = H.tmpdir()

--- Puts the cursor on the first `needle` of line `line` (0-based), `skip` characters in.
local function cursor_at(buf, needle, skip)
  local line = H.line_of(buf, needle)
  local col = vim.api.nvim_buf_get_lines(buf, line, line + 1, false)[1]:find(needle, 1, true) - 1
  vim.api.nvim_win_set_cursor(0, { line + 1, col + (skip or 0) })
  return line
end

H.test('vim.lsp.buf.definition jumps from a launch to its kernel', function()
  local buf = H.open(H.copy('tests/fixtures/rules/KL011.py', dir, 'nav.py'))
  H.client(buf)
  cursor_at(buf, 'mm_ok[(1,)]', 2)
  local want = H.line_of(buf, 'def mm_ok(')
  vim.lsp.buf.definition()
  H.wait(10000, function() return vim.api.nvim_win_get_cursor(0)[1] - 1 == want end, 'the cursor on `def mm_ok(`')
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local line = vim.api.nvim_buf_get_lines(buf, row - 1, row, false)[1]
  H.eq('mm_ok', line:sub(col + 1, col + 5), 'the cursor on the kernel name')
end)

H.test('definition of BLOCK= at a launch is the constexpr parameter; references find its uses', function()
  local buf = H.open(dir .. '/nav.py')
  local client = H.client(buf)
  cursor_at(buf, 'add_mismatch[(1,)](x, y, out, BLOCK=128)', #'add_mismatch[(1,)](x, y, out, ')
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  local r = client:request_sync('textDocument/definition', params, 10000, buf)
  H.ok(r and r.result, 'a definition: ' .. vim.inspect(r))
  local loc = r.result[1] or r.result
  H.eq(H.line_of(buf, 'def add_mismatch('), loc.range.start.line, 'the parameter is on the def line')
  params.context = { includeDeclaration = true }
  local refs = client:request_sync('textDocument/references', params, 10000, buf)
  -- the parameter, two uses inside the kernel, and the launch keyword
  H.eq(4, #refs.result, 'references: ' .. vim.inspect(refs.result))
end)

H.test('document symbols list the kernels with their constexpr parameters', function()
  local buf = H.open(dir .. '/nav.py')
  local client = H.client(buf)
  local r = client:request_sync('textDocument/documentSymbol', { textDocument = vim.lsp.util.make_text_document_params(buf) }, 10000, buf)
  local names = {}
  for _, s in ipairs(r.result) do names[#names + 1] = s.name end
  H.ok(vim.tbl_contains(names, 'mm_transposed_b') and vim.tbl_contains(names, 'launch'), vim.inspect(names))
  local mm = vim.iter(r.result):find(function(s) return s.name == 'mm_ok' end)
  local kids = vim.tbl_map(function(c) return c.name end, mm.children)
  H.eq({ 'a_ptr', 'b_ptr', 'c_ptr', 'BM', 'BN', 'BK' }, kids, 'parameters')
  H.contains(mm.detail, '1 launch site')
end)

H.test('KL011 reports the tl.dot whose inner dimensions differ', function()
  local buf = H.open(dir .. '/nav.py')
  local d = H.wait_code(buf, 'KL011')
  H.contains(d.message, '[64, 32] @ [128, 32]')
end)
