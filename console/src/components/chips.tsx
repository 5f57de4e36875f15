/** Short values (roles, event types) as a list of chips, in the order given. */
export function Chips({ items }: { items: readonly string[] }) {
  return (
    <ul class="chips">
      {items.map((item) => (
        <li key={item} class="chip">
          {item}
        </li>
      ))}
    </ul>
  );
}
