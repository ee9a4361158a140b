//! SUBSCRIBE, UNSUBSCRIBE and PUBLISH on exact channel names; the delivery
//! is in `crate::clients`. A RESP2 connection with subscriptions takes only
//! these, PING and QUIT (see `execute`), as in redis-server.

use super::{Ctx, Res};
use crate::resp::Reply;

fn confirm(what: &str, channel: Option<&[u8]>, count: usize) -> Reply {
    Reply::Push(vec![
        Reply::text(what),
        channel.map_or(Reply::Nil, |c| Reply::Bulk(c.to_vec())),
        Reply::Int(count as i64),
    ])
}

pub(super) fn subscribe(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let mut out = Vec::with_capacity(args.len() - 1);
    for ch in &args[1..] {
        let n = cx.sh.clients.subscribe(cx.conn.id, ch);
        cx.conn.subscriptions = n;
        out.push(confirm("subscribe", Some(ch), n));
    }
    Ok(Reply::Seq(out))
}

pub(super) fn unsubscribe(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let channels = if args.len() > 1 {
        args[1..].to_vec()
    } else {
        cx.sh.clients.channels_of(cx.conn.id)
    };
    if channels.is_empty() {
        return Ok(confirm("unsubscribe", None, cx.conn.subscriptions));
    }
    let mut out = Vec::with_capacity(channels.len());
    for ch in &channels {
        let n = cx.sh.clients.unsubscribe(cx.conn.id, ch);
        cx.conn.subscriptions = n;
        out.push(confirm("unsubscribe", Some(ch), n));
    }
    Ok(Reply::Seq(out))
}

pub(super) fn publish(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    Ok(Reply::Int(cx.sh.clients.publish(&args[1], &args[2]) as i64))
}
