-- Windows and messages for kernel-lsp: markdown in a float or a scratch
-- split, and a workspace edit as a unified diff.

local M = {}

--- The last messages shown, newest last (the tests read them).
M.messages = {}

---@param msg string
---@param level? integer
function M.notify(msg, level)
  table.insert(M.messages, { msg = msg, level = level or vim.log.levels.INFO })
  if #M.messages > 100 then
    table.remove(M.messages, 1)
  end
  vim.notify('kernel-lsp: ' .. msg, level or vim.log.levels.INFO)
end

--- A scratch buffer in a split at the bottom, reused by name; `q` closes it.
---@return integer win, integer buf
local function scratch_split(name, filetype, lines)
  local buf = vim.fn.bufnr(name)
  local win = buf ~= -1 and vim.fn.bufwinid(buf) or -1
  if win == -1 then
    vim.cmd('botright new')
    win = vim.api.nvim_get_current_win()
    if buf == -1 then
      buf = vim.api.nvim_get_current_buf()
      pcall(vim.api.nvim_buf_set_name, buf, name)
    else
      local empty = vim.api.nvim_get_current_buf()
      vim.api.nvim_win_set_buf(win, buf)
      if empty ~= buf then
        pcall(vim.api.nvim_buf_delete, empty, { force = true })
      end
    end
  else
    vim.api.nvim_set_current_win(win)
  end
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = filetype
  vim.wo[win].wrap = false
  vim.keymap.set('n', 'q', '<cmd>close<cr>', { buffer = buf, nowait = true, desc = 'close' })
  local height = math.min(#lines + 1, math.max(5, math.floor(vim.o.lines / 2)))
  pcall(vim.api.nvim_win_set_height, win, height)
  return win, buf
end

--- Shows markdown lines in a floating window (`float`) or a scratch split.
---@param lines string[]
---@param opts { title?: string, float?: boolean, split?: boolean, name?: string }
---@return integer win, integer buf
function M.show_markdown(lines, opts)
  if opts.float then
    local buf, win = vim.lsp.util.open_floating_preview(lines, 'markdown', {
      border = 'rounded',
      focus_id = 'kernel-lsp-float',
      max_width = math.min(100, vim.o.columns - 4),
      max_height = math.max(10, math.floor(vim.o.lines * 0.6)),
      title = opts.title and (' ' .. opts.title .. ' ') or nil,
    })
    return win, buf
  end
  return scratch_split(opts.name or ('kernel-lsp://' .. (opts.title or 'output')), 'markdown', lines)
end

--- The text edits of a WorkspaceEdit, by URI, in the order given; other
--- operations (create, rename, delete) are listed in `ops`.
---@return table<string, lsp.TextEdit[]> edits, string[] order, string[] ops
local function edits_by_uri(edit)
  local by, order, ops = {}, {}, {}
  local function add(uri, list)
    if not by[uri] then
      by[uri] = {}
      order[#order + 1] = uri
    end
    vim.list_extend(by[uri], list or {})
  end
  if edit.documentChanges then
    for _, change in ipairs(edit.documentChanges) do
      if change.kind then
        ops[#ops + 1] = string.format('%s %s%s', change.kind, change.uri or change.oldUri or '',
          change.newUri and (' -> ' .. change.newUri) or '')
      else
        add(change.textDocument.uri, change.edits)
      end
    end
  elseif edit.changes then
    for uri, list in pairs(edit.changes) do
      add(uri, list)
    end
    table.sort(order)
  end
  return by, order, ops
end

--- A unified diff of what `edit` would change, computed on copies of the
--- buffers (nothing is modified).
---@param edit lsp.WorkspaceEdit
---@param offset_encoding string
---@return string
function M.edit_diff(edit, offset_encoding)
  local by, order, ops = edits_by_uri(edit)
  local out = {}
  for _, op in ipairs(ops) do
    out[#out + 1] = '# ' .. op .. '\n'
  end
  for _, uri in ipairs(order) do
    local bufnr = vim.uri_to_bufnr(uri)
    vim.fn.bufload(bufnr)
    local old = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
    local copy = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_lines(copy, 0, -1, false, old)
    vim.lsp.util.apply_text_edits(by[uri], copy, offset_encoding)
    local new = vim.api.nvim_buf_get_lines(copy, 0, -1, false)
    vim.api.nvim_buf_delete(copy, { force = true })
    local d = vim.diff(table.concat(old, '\n') .. '\n', table.concat(new, '\n') .. '\n', {
      result_type = 'unified',
      ctxlen = 3,
    })
    if d ~= '' then
      local path = vim.fn.fnamemodify(vim.uri_to_fname(uri), ':~:.')
      out[#out + 1] = string.format('--- a/%s\n+++ b/%s\n%s', path, path, d)
    end
  end
  return table.concat(out)
end

--- Shows a diff in a split at the bottom (filetype diff). Returns its window.
---@return integer win
function M.show_diff(diff, title)
  local lines = vim.split(diff, '\n', { trimempty = true })
  table.insert(lines, 1, '# ' .. title)
  local win = scratch_split('kernel-lsp://rewrite-preview', 'diff', lines)
  vim.cmd('redraw')
  return win
end

return M
